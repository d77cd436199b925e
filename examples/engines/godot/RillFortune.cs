// RillFortune.cs: a Godot 4 (.NET) node that prints a fortune from the demo
// model, a few tokens per frame (docs/EMBEDDING.md, "Godot .NET"). Needs the
// C# package as a NuGet reference of the project (its runtimes/ folder brings
// the native libraries) and ../FrameBudgetedFortune.cs. Compiled by the tests
// only against stand-ins for the few Godot members it uses (tests/csharp).
#if GODOT
using Godot;

public partial class RillFortune : Node
{
    [Export] public string ModelPath = "res://models/fortune";
    [Export] public string Backend = "auto";
    [Export] public string Prompt = "A fool and his money";
    [Export] public double FrameBudgetMs = 4.0;

    FrameBudgetedFortune fortune;

    public override void _Ready()
    {
        fortune = new FrameBudgetedFortune(ProjectSettings.GlobalizePath(ModelPath), Backend, Prompt, GD.Randi(), 64);
    }

    public override void _Process(double delta)
    {
        if (fortune == null || fortune.Done) return;
        fortune.Tick(FrameBudgetMs);
        if (fortune.Done) GD.Print(Prompt + fortune.Text);
    }

    public override void _ExitTree()
    {
        if (fortune != null) fortune.Dispose();
        fortune = null;
    }
}
#endif
