// EngineStandIns.cs: the few UnityEngine and Godot members that the engine
// examples (examples/engines/unity, examples/engines/godot) use, so that the
// tests compile those examples, with UNITY_5_3_OR_NEWER or GODOT defined,
// without the engines. They check the examples' C# and their use of rill;
// they say nothing about the engines' own assemblies, which are not here.
namespace UnityEngine
{
    public class MonoBehaviour { }
    public static class Debug { public static void Log(object message) { System.Console.WriteLine(message); } }
    public static class Random { public static int Range(int min, int max) { return min; } }
}

namespace Godot
{
    public partial class Node
    {
        public virtual void _Ready() { }
        public virtual void _Process(double delta) { }
        public virtual void _ExitTree() { }
    }

    [System.AttributeUsage(System.AttributeTargets.Field | System.AttributeTargets.Property)]
    public sealed class ExportAttribute : System.Attribute { }

    public static class GD
    {
        public static void Print(params object[] what) { System.Console.WriteLine(string.Concat(what)); }
        public static uint Randi() { return 0; }
    }

    public static class ProjectSettings { public static string GlobalizePath(string path) { return path; } }
}
