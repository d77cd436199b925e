// FortuneCheck.cs: runs the engine examples' FrameBudgetedFortune
// (examples/engines) on the CPU backend with the demo model, one 4 ms frame
// budget per Tick, and checks that its text is the text `rill generate`
// prints for the same prompt, seed and token budget (the text itself is
// checked against transformers by tests/generate).
//
// usage: mono fortune_check.exe <model folder> <rill tool>
using System;
using System.Diagnostics;

static class FortuneCheck
{
    const string Prompt = "A fool and his money";

    static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: fortune_check.exe <model folder> <rill tool>");
            return 2;
        }
        string text;
        int frames = 0;
        using (var fortune = new FrameBudgetedFortune(args[0], "cpu", Prompt, 2, 24))
        {
            while (!fortune.Done)
            {
                fortune.Tick(4.0);
                ++frames;
            }
            text = fortune.Text;
        }
        var start = new ProcessStartInfo(args[1], "generate --model \"" + args[0] + "\" --prompt \"" + Prompt +
                                                  "\" --seed 2 --backend cpu --max-new-tokens 24")
        {
            UseShellExecute = false,
            RedirectStandardOutput = true,
        };
        string expected;
        using (var tool = Process.Start(start))
        {
            expected = tool.StandardOutput.ReadToEnd();
            tool.WaitForExit();
            if (tool.ExitCode != 0)
            {
                Console.Error.WriteLine("rill generate failed with exit code " + tool.ExitCode);
                return 1;
            }
        }
        Console.WriteLine("{0} frames: {1}", frames, text.Replace("\n", " / "));
        if (text.TrimEnd() != expected.TrimEnd())
        {
            Console.Error.WriteLine("FrameBudgetedFortune wrote \"{0}\"; rill generate printed \"{1}\"", text, expected);
            return 1;
        }
        return 0;
    }
}
