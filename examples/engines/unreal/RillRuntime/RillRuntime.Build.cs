// RillRuntime.Build.cs: an Unreal Engine third-party module that brings rill
// into a project (docs/EMBEDDING.md, "Unreal"): rill.h on the include path,
// librill linked (rill.dll's import library on Win64), and the library with
// its backend plugins staged beside the game's binaries, where librill looks
// for its plugins. Lay it out as Source/ThirdParty/RillRuntime/ with this
// file, include/rill.h, lib/Linux/ (librill.so, librill.so.0, librill-*.so
// from a rill install) and lib/Win64/ (rill.dll, rill.lib, rill-*.dll), and
// add "RillRuntime" to the game module's PublicDependencyModuleNames.
// Not compiled by rill's tests: that needs UnrealBuildTool.
using System.IO;
using UnrealBuildTool;

public class RillRuntime : ModuleRules
{
    public RillRuntime(ReadOnlyTargetRules Target) : base(Target)
    {
        Type = ModuleType.External;
        PublicSystemIncludePaths.Add(Path.Combine(ModuleDirectory, "include"));

        if (Target.Platform == UnrealTargetPlatform.Linux)
        {
            string lib = Path.Combine(ModuleDirectory, "lib", "Linux");
            PublicAdditionalLibraries.Add(Path.Combine(lib, "librill.so"));
            // The linked name is librill.so.0 (its SONAME); plugins are loaded at run time.
            RuntimeDependencies.Add("$(BinaryOutputDir)/librill.so.0", Path.Combine(lib, "librill.so.0"));
            foreach (string plugin in Directory.GetFiles(lib, "librill-*.so"))
            {
                RuntimeDependencies.Add("$(BinaryOutputDir)/" + Path.GetFileName(plugin), plugin);
            }
        }
        else if (Target.Platform == UnrealTargetPlatform.Win64)
        {
            string lib = Path.Combine(ModuleDirectory, "lib", "Win64");
            PublicAdditionalLibraries.Add(Path.Combine(lib, "rill.lib"));
            PublicDelayLoadDLLs.Add("rill.dll");
            RuntimeDependencies.Add("$(BinaryOutputDir)/rill.dll", Path.Combine(lib, "rill.dll"));
            foreach (string plugin in Directory.GetFiles(lib, "rill-*.dll"))
            {
                RuntimeDependencies.Add("$(BinaryOutputDir)/" + Path.GetFileName(plugin), plugin);
            }
        }
    }
}
