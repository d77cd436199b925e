// FrameBudgetedFortune.cs: the engine-free part of the Unity and Godot
// examples (unity/RillFortune.cs, godot/RillFortune.cs). It generates text
// from a Hugging Face folder (the demo model, models/fortune) a few forward
// passes per frame, within a time budget, so that the frame rate holds, as
// examples/game_loop does in C++.
using System;
using System.Diagnostics;
using System.Text;
using Rill;

public sealed class FrameBudgetedFortune : IDisposable
{
    readonly Context context;
    readonly LanguageModel lm;
    readonly Tokenizer tokenizer;
    readonly Session session;
    readonly StringBuilder text = new StringBuilder();
    double slowestStepMs;

    /// <summary>True once the text has ended (end of sequence or maxNewTokens).</summary>
    public bool Done { get; private set; }

    /// <summary>The text generated so far.</summary>
    public string Text { get { return text.ToString(); } }

    /// <summary>Loads the folder on backend ("auto", "cpu", "vulkan", "cuda") and
    /// queues prompt; sampling as the folder's generation_config.json, seeded.</summary>
    public FrameBudgetedFortune(string modelPath, string backend, string prompt, ulong seed, int maxNewTokens)
    {
        context = new Context("[runtime]\nbackend = \"" + backend + "\"\n");
        lm = new LanguageModel(context, modelPath);
        tokenizer = new Tokenizer(modelPath);
        var options = Session.Defaults(lm);
        options.MaxNewTokens = maxNewTokens;
        options.Sampler.Seed = seed;
        session = new Session(lm, options);
        session.SetTokenizer(tokenizer);
        session.AppendText(prompt, true);
    }

    /// <summary>One frame's share: forward passes (a chunk of the prompt or one
    /// new token each) while budgetMs has room for the slowest one seen, and at
    /// least one, so that the text advances on any machine. Returns the new text.</summary>
    public string Tick(double budgetMs)
    {
        var piece = new StringBuilder();
        var clock = Stopwatch.StartNew();
        do
        {
            double start = clock.Elapsed.TotalMilliseconds;
            int generated;
            StopReason reason = session.Step(1, (id, t) => { piece.Append(t); return false; }, out generated);
            slowestStepMs = Math.Max(slowestStepMs, clock.Elapsed.TotalMilliseconds - start);
            Done = reason != StopReason.None;
        } while (!Done && clock.Elapsed.TotalMilliseconds + slowestStepMs <= budgetMs);
        text.Append(piece);
        return piece.ToString();
    }

    public void Dispose()
    {
        session.Dispose();   // before the tokenizer it borrows
        tokenizer.Dispose();
        lm.Dispose();
        context.Dispose();
    }
}
