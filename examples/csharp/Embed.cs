// Embed.cs — the embed example in C# (Mono, .NET, Unity, Godot): config ->
// context -> tensors -> ops -> a decoder stack -> results, each checked
// against a double-precision computation done here.
//
// usage: mono embed.exe [backend]    (auto, cpu, vulkan, cuda; default auto)
// exit: 0 results match, 1 mismatch or error, 77 backend not available here.
using System;
using Rill;

static class Embed
{
    static float[] Values(int count, int seed, float scale)
    {
        var random = new Random(seed);
        var values = new float[count];
        for (int i = 0; i < count; ++i) values[i] = scale * (float)(2.0 * random.NextDouble() - 1.0);
        return values;
    }

    static int Main(string[] args)
    {
        string backend = args.Length > 0 ? args[0] : "auto";
        try
        {
            return Run(backend);
        }
        catch (RillBackendUnavailableException e)
        {
            if (backend == "auto") throw;
            Console.WriteLine("embed.exe: backend " + backend + " not available here, skipped: " + e.Message);
            return 77;
        }
        catch (RillException e)
        {
            Console.Error.WriteLine("embed.exe: " + e.Status + ": " + e.Message);
            return 1;
        }
    }

    static int Run(string backend)
    {
        const int rows = 4, dim = 64, n = 32;
        const float eps = 1e-6f;
        using (var ctx = new Context("[runtime]\nbackend = \"" + backend + "\"\n"))
        {
            Console.WriteLine("rill " + Library.Version + " on " + ctx.BackendName + " (" + ctx.DeviceName + ")");
            float[] r0 = Values(rows * dim, 1, 1f), x0 = Values(rows * dim, 2, 1f);
            float[] w0 = Values(dim, 3, 0.5f), g0 = Values(n * dim, 4, 0.2f);
            using (Tensor residual = ctx.CreateTensor(r0, rows, dim), x = ctx.CreateTensor(x0, rows, dim),
                   weight = ctx.CreateTensor(w0, dim), w = ctx.CreateTensor(g0, n, dim),
                   y = ctx.CreateTensor(DType.F32, rows, n))
            {
                // residual += x; x = rms_norm(residual) * weight; y = x . w^T
                ctx.FusedAddRmsNorm(x, residual, null, weight, eps);
                ctx.Gemm(x, w, null, 1f, 0f, y);
                float[] rOut = residual.ReadF32(), yOut = y.ReadF32();

                double worst = 0;
                for (int i = 0; i < rows; ++i)
                {
                    var r = new double[dim];
                    double sumSq = 0;
                    for (int k = 0; k < dim; ++k)
                    {
                        r[k] = (double)r0[i * dim + k] + x0[i * dim + k];
                        sumSq += r[k] * r[k];
                        worst = Math.Max(worst, Math.Abs(r[k] - rOut[i * dim + k]));
                    }
                    double inv = 1.0 / Math.Sqrt(sumSq / dim + eps);
                    for (int j = 0; j < n; ++j)
                    {
                        double acc = 0;
                        for (int k = 0; k < dim; ++k) acc += r[k] * inv * w0[k] * g0[j * dim + k];
                        worst = Math.Max(worst, Math.Abs(acc - yOut[i * n + j]));
                    }
                }
                Console.WriteLine("fused add+rms_norm and gemm: max |error| " + worst.ToString("E2"));
                if (!(worst < 1e-4))
                {
                    Console.Error.WriteLine("embed.exe: results differ from the double-precision reference");
                    return 1;
                }

                // Errors arrive as exceptions with librill's message.
                using (Tensor wrong = ctx.CreateTensor(DType.F32, rows, n + 1))
                {
                    try
                    {
                        ctx.Gemm(x, w, null, 1f, 0f, wrong);
                        Console.Error.WriteLine("embed.exe: a wrongly shaped GEMM output was accepted");
                        return 1;
                    }
                    catch (RillShapeException e)
                    {
                        Console.WriteLine("expected error: " + e.Message);
                    }
                }
            }
            return RunDecoder(ctx, dim);
        }
    }

    // A decoder stack: prefill 5 tokens, and the same 5 as 4 + 1 cached decode step.
    static int RunDecoder(Context ctx, int dim)
    {
        ModelDesc desc = ModelDesc.Defaults();
        desc.NumLayers = 2;
        desc.HiddenSize = dim;
        desc.NumHeads = 4;
        desc.NumKvHeads = 2;
        desc.IntermediateSize = 2 * dim;
        int hd = dim / desc.NumHeads, q = desc.NumHeads * hd, kv = desc.NumKvHeads * hd, inter = desc.IntermediateSize;
        using (Model model = ctx.CreateModel(desc))
        {
            int seed = 10;
            for (int layer = 0; layer < desc.NumLayers; ++layer)
            {
                string p = "model.layers." + layer + ".";
                SetMatrix(model, p + "self_attn.q_proj.weight", q, dim, seed++);
                SetMatrix(model, p + "self_attn.k_proj.weight", kv, dim, seed++);
                SetMatrix(model, p + "self_attn.v_proj.weight", kv, dim, seed++);
                SetMatrix(model, p + "self_attn.o_proj.weight", dim, q, seed++);
                SetMatrix(model, p + "mlp.gate_proj.weight", inter, dim, seed++);
                SetMatrix(model, p + "mlp.up_proj.weight", inter, dim, seed++);
                SetMatrix(model, p + "mlp.down_proj.weight", dim, inter, seed++);
                SetNorm(model, p + "input_layernorm.weight", dim, seed++);
                SetNorm(model, p + "post_attention_layernorm.weight", dim, seed++);
            }
            SetNorm(model, "model.norm.weight", dim, seed);
            model.CheckWeights();

            const int T = 5;
            float[] tokens = Values(T * dim, 99, 1f);
            float[] full;
            using (Tensor hidden = ctx.CreateTensor(tokens, 1, T, dim))
            {
                try
                {
                    model.Forward(hidden);
                }
                catch (RillUnsupportedException e)
                {
                    Console.WriteLine("decoder stack: not supported on " + ctx.BackendName + ": " + e.Message);
                    return 0;
                }
                full = hidden.ReadF32();
            }
            using (KvCache cache = model.CreateKvCache(1, 8))
            {
                var first = new float[(T - 1) * dim];
                var last = new float[dim];
                Array.Copy(tokens, first, first.Length);
                Array.Copy(tokens, first.Length, last, 0, dim);
                using (Tensor prefix = ctx.CreateTensor(first, 1, T - 1, dim)) model.Forward(prefix, cache);
                using (Tensor step = ctx.CreateTensor(last, 1, 1, dim))
                {
                    model.Forward(step, cache);
                    float[] stepOut = step.ReadF32();
                    double diff = 0;
                    for (int k = 0; k < dim; ++k) diff = Math.Max(diff, Math.Abs(stepOut[k] - full[(T - 1) * dim + k]));
                    Console.WriteLine("decoder stack: prefill vs cached decode, last token max |difference| " +
                                      diff.ToString("E2") + ", cache holds " + cache.Length(0));
                    if (!(diff < 1e-4) || cache.Length(0) != T)
                    {
                        Console.Error.WriteLine("embed.exe: the cached decode step disagrees with the prefill");
                        return 1;
                    }
                }
            }
        }
        return 0;
    }

    static void SetMatrix(Model model, string name, int rows, int cols, int seed)
    {
        model.SetWeight(name, new long[] { rows, cols }, Values(rows * cols, seed, (float)(1.0 / Math.Sqrt(cols))));
    }

    static void SetNorm(Model model, string name, int dim, int seed)
    {
        float[] values = Values(dim, seed, 0.1f);
        for (int i = 0; i < dim; ++i) values[i] += 1f;
        model.SetWeight(name, new long[] { dim }, values);
    }
}
