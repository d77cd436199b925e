// RillTests.cs — tests of the C# binding, with a small self-contained runner.
//
// usage: mono rill_tests.exe <backend> <path to rill.h>
// exit: 0 all passed, 1 a test failed, 77 the backend is not available here.
using System;
using System.Text;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text.RegularExpressions;
using Rill;

static class RillTests
{
    static string backend;
    static string headerPath;

    static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: rill_tests.exe <backend> <path to rill.h>");
            return 2;
        }
        backend = args[0];
        headerPath = args[1];
        try
        {
            using (var probe = NewContext()) Console.WriteLine("backend " + probe.BackendName + ": " + probe.DeviceName);
        }
        catch (RillBackendUnavailableException e)
        {
            Console.WriteLine("skipped: backend " + backend + " not available: " + e.Message);
            return 77;
        }

        var tests = typeof(RillTests).GetMethods(BindingFlags.Static | BindingFlags.NonPublic)
                                     .Where(m => m.Name.StartsWith("Test")).OrderBy(m => m.Name).ToList();
        int failed = 0;
        foreach (MethodInfo test in tests)
        {
            try
            {
                test.Invoke(null, null);
                Console.WriteLine("PASS " + test.Name);
            }
            catch (TargetInvocationException e)
            {
                ++failed;
                Console.WriteLine("FAIL " + test.Name + ": " + e.InnerException);
            }
        }
        Console.WriteLine((tests.Count - failed) + " of " + tests.Count + " tests passed on " + backend);
        return failed == 0 ? 0 : 1;
    }

    // ---------------------------------------------------------------- helpers

    static Context NewContext() { return new Context("[runtime]\nbackend = \"" + backend + "\"\n"); }

    static void Assert(bool condition, string what)
    {
        if (!condition) throw new Exception("assertion failed: " + what);
    }

    static T Throws<T>(Action action, string what) where T : Exception
    {
        try
        {
            action();
        }
        catch (T e)
        {
            return e;
        }
        throw new Exception("expected " + typeof(T).Name + ": " + what);
    }

    static float[] Values(int count, int seed, double scale, double offset = 0)
    {
        var random = new Random(seed);
        var values = new float[count];
        for (int i = 0; i < count; ++i) values[i] = (float)(offset + scale * (2 * random.NextDouble() - 1));
        return values;
    }

    static void Close(float[] actual, double[] expected, double tolerance, string what)
    {
        Assert(actual.Length == expected.Length, what + ": length");
        double worst = 0;
        for (int i = 0; i < actual.Length; ++i) worst = Math.Max(worst, Math.Abs(actual[i] - expected[i]));
        if (!(worst <= tolerance)) throw new Exception(what + ": max |error| " + worst + " > " + tolerance);
    }

    // ------------------------------------------------------------------ tests

    // The C# types a C type of rill.h may be declared as in Native.
    static readonly Dictionary<string, Type[]> CTypeToCSharp = new Dictionary<string, Type[]>
    {
        { "void", new[] { typeof(void) } },
        { "rill_status", new[] { typeof(Status) } },
        { "rill_dtype", new[] { typeof(DType) } },
        { "rill_log_level", new[] { typeof(LogLevel) } },
        { "rill_act_fn", new[] { typeof(ActFn) } },
        { "rill_log_fn", new[] { typeof(NativeLogFn) } },
        { "float", new[] { typeof(float) } },
        { "int32_t", new[] { typeof(int) } },
        { "uint32_t", new[] { typeof(uint) } },
        { "int64_t", new[] { typeof(long) } },
        { "uint64_t", new[] { typeof(ulong) } },
        { "size_t", new[] { typeof(UIntPtr) } },
        { "size_t*", new[] { typeof(UIntPtr).MakeByRefType() } },
        { "char*", new[] { typeof(byte[]), typeof(IntPtr) } }, // arguments: UTF-8 bytes; results: borrowed
        { "void*", new[] { typeof(float[]), typeof(ushort[]), typeof(IntPtr) } },
        { "float*", new[] { typeof(float[]) } },
        { "int32_t*", new[] { typeof(int[]), typeof(int).MakeByRefType() } },
        { "int64_t*", new[] { typeof(long[]) } },
        { "rill_context*", new[] { typeof(ContextHandle), typeof(IntPtr) } },
        { "rill_tensor*", new[] { typeof(TensorHandle), typeof(IntPtr) } },
        { "rill_model*", new[] { typeof(ModelHandle), typeof(IntPtr) } },
        { "rill_kv_cache*", new[] { typeof(KvCacheHandle), typeof(IntPtr) } },
        { "rill_context**", new[] { typeof(ContextHandle).MakeByRefType() } },
        { "rill_tensor**", new[] { typeof(TensorHandle).MakeByRefType() } },
        { "rill_model**", new[] { typeof(ModelHandle).MakeByRefType() } },
        { "rill_kv_cache**", new[] { typeof(KvCacheHandle).MakeByRefType() } },
        { "rill_model_desc*", new[] { typeof(ModelDesc).MakeByRefType() } },
        { "rill_attention_params*", new[] { typeof(AttentionParams).MakeByRefType() } },
        { "rill_vulkan_device*", new[] { typeof(VulkanDevice).MakeByRefType() } },
        { "rill_sampler_params*", new[] { typeof(SamplerParams).MakeByRefType() } },
        { "rill_sampler*", new[] { typeof(IntPtr) } },
        { "rill_sampler**", new[] { typeof(IntPtr).MakeByRefType() } },
        { "rill_lm*", new[] { typeof(IntPtr) } },
        { "rill_lm**", new[] { typeof(IntPtr).MakeByRefType() } },
        { "rill_lm_load_options*", new[] { typeof(LmLoadOptions).MakeByRefType() } },
        { "rill_lm_info*", new[] { typeof(LmInfo).MakeByRefType() } },
        { "rill_session_options*", new[] { typeof(SessionOptions).MakeByRefType() } },
        { "rill_session*", new[] { typeof(IntPtr) } },
        { "rill_session**", new[] { typeof(IntPtr).MakeByRefType() } },
        { "rill_token_fn", new[] { typeof(NativeTokenFn) } },
        { "rill_stop_reason*", new[] { typeof(StopReason).MakeByRefType() } },
        { "rill_tokenizer*", new[] { typeof(TokenizerHandle), typeof(IntPtr) } },
        { "rill_detokenizer*", new[] { typeof(DetokenizerHandle), typeof(IntPtr) } },
        { "rill_tokenizer**", new[] { typeof(TokenizerHandle).MakeByRefType() } },
        { "rill_detokenizer**", new[] { typeof(DetokenizerHandle).MakeByRefType() } },
    };

    // "const int64_t* shape" -> "int64_t*"; "const char*" -> "char*".
    static string CType(string declaration, bool named)
    {
        string text = Regex.Replace(declaration, @"\bconst\b", "").Trim();
        if (named) text = Regex.Replace(text, @"\w+$", "");
        return Regex.Replace(text, @"\s+", "");
    }

    // Every function of rill.h has a DllImport whose result and parameter types
    // match the C declaration, and nothing is declared that rill.h lacks.
    static void TestDeclarationsMatchTheHeader()
    {
        string header = File.ReadAllText(headerPath);
        var imported = typeof(Native).GetMethods(BindingFlags.Static | BindingFlags.Public)
                                     .Where(m => m.Name.StartsWith("rill_")).ToList();
        var declared = new HashSet<string>();
        foreach (Match m in Regex.Matches(header, @"RILL_API\s+([^;{]*?)\b(rill_\w+)\s*\(([^)]*)\)\s*;"))
        {
            string name = m.Groups[2].Value, list = m.Groups[3].Value.Trim();
            declared.Add(name);
            string[] parameters = list == "void" || list == "" ? new string[0] : list.Split(',');
            var overloads = imported.Where(x => x.Name == name).ToList();
            Assert(overloads.Count > 0, name + " is declared in Native");
            foreach (MethodInfo overload in overloads)
            {
                string result = CType(m.Groups[1].Value, false);
                Assert(CTypeToCSharp.ContainsKey(result) && CTypeToCSharp[result].Contains(overload.ReturnType),
                       name + " returns " + result + ", declared as " + overload.ReturnType);
                ParameterInfo[] cs = overload.GetParameters();
                Assert(cs.Length == parameters.Length, name + " takes " + parameters.Length + " parameters");
                for (int i = 0; i < cs.Length; ++i)
                {
                    string c = CType(parameters[i], true);
                    Assert(CTypeToCSharp.ContainsKey(c) && CTypeToCSharp[c].Contains(cs[i].ParameterType),
                           name + " parameter " + i + " is " + c + ", declared as " + cs[i].ParameterType);
                }
            }
        }
        Assert(declared.Count > 40, "the header parses (" + declared.Count + " functions)");
        foreach (var m in imported) Assert(declared.Contains(m.Name), m.Name + " is in rill.h");
        Assert(Marshal.SizeOf(typeof(ModelDesc)) == 3280, "ModelDesc has rill_model_desc's size");
        Assert(Marshal.SizeOf(typeof(AttentionParams)) == 16, "AttentionParams has rill_attention_params's size");
        Assert(Marshal.SizeOf(typeof(VulkanDevice)) == 48, "VulkanDevice has rill_vulkan_device's size");
        Assert(Marshal.SizeOf(typeof(SamplerParams)) == 40, "SamplerParams has rill_sampler_params's size");
        Assert(Marshal.SizeOf(typeof(SessionOptions)) == 56, "SessionOptions has rill_session_options's size");
        Assert(Marshal.SizeOf(typeof(LmInfo)) == 168, "LmInfo has rill_lm_info's size");
        Assert(Marshal.SizeOf(typeof(LmLoadOptions)) == 20, "LmLoadOptions has rill_lm_load_options's size");
    }

    // A one-layer Llama folder with random f32 weights and a hand-written
    // byte-fallback BPE tokenizer of 7 tokens (the model has 40 ids).
    static string WriteModelFolder()
    {
        const int V = 40, D = 16, H = 2, Hkv = 1, Hd = 8, I = 32;
        string dir = Path.Combine(Path.GetTempPath(), "rill_cs_lm_" + Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(dir);
        File.WriteAllText(Path.Combine(dir, "config.json"),
            "{\"model_type\": \"llama\", \"vocab_size\": 40, \"hidden_size\": 16, \"intermediate_size\": 32, " +
            "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"rms_norm_eps\": 1e-6, " +
            "\"max_position_embeddings\": 64, \"bos_token_id\": 3, \"eos_token_id\": 39, \"tie_word_embeddings\": false}");
        var tensors = new List<KeyValuePair<string, long[]>>
        {
            new KeyValuePair<string, long[]>("model.embed_tokens.weight", new long[] { V, D }),
            new KeyValuePair<string, long[]>("lm_head.weight", new long[] { V, D }),
            new KeyValuePair<string, long[]>("model.norm.weight", new long[] { D }),
            new KeyValuePair<string, long[]>("model.layers.0.input_layernorm.weight", new long[] { D }),
            new KeyValuePair<string, long[]>("model.layers.0.post_attention_layernorm.weight", new long[] { D }),
            new KeyValuePair<string, long[]>("model.layers.0.self_attn.q_proj.weight", new long[] { H * Hd, D }),
            new KeyValuePair<string, long[]>("model.layers.0.self_attn.k_proj.weight", new long[] { Hkv * Hd, D }),
            new KeyValuePair<string, long[]>("model.layers.0.self_attn.v_proj.weight", new long[] { Hkv * Hd, D }),
            new KeyValuePair<string, long[]>("model.layers.0.self_attn.o_proj.weight", new long[] { D, H * Hd }),
            new KeyValuePair<string, long[]>("model.layers.0.mlp.gate_proj.weight", new long[] { I, D }),
            new KeyValuePair<string, long[]>("model.layers.0.mlp.up_proj.weight", new long[] { I, D }),
            new KeyValuePair<string, long[]>("model.layers.0.mlp.down_proj.weight", new long[] { D, I }),
        };
        var header = new StringBuilder("{");
        var data = new List<byte>();
        int seed = 1;
        foreach (var t in tensors)
        {
            long count = 1;
            foreach (long d in t.Value) count *= d;
            bool norm = t.Value.Length == 1;
            float[] values = Values((int)count, seed++, norm ? 0.1 : 0.5, norm ? 1.0 : 0.0);
            if (header.Length > 1) header.Append(',');
            header.Append("\"" + t.Key + "\":{\"dtype\":\"F32\",\"shape\":[" + string.Join(",", t.Value) +
                          "],\"data_offsets\":[" + data.Count + "," + (data.Count + 4 * count) + "]}");
            foreach (float v in values) data.AddRange(BitConverter.GetBytes(v));
        }
        header.Append('}');
        byte[] headerBytes = Encoding.UTF8.GetBytes(header.ToString());
        using (var f = File.Create(Path.Combine(dir, "model.safetensors")))
        {
            f.Write(BitConverter.GetBytes((ulong)headerBytes.Length), 0, 8);
            f.Write(headerBytes, 0, headerBytes.Length);
            f.Write(data.ToArray(), 0, data.Count);
        }
        File.WriteAllText(Path.Combine(dir, "tokenizer.json"),
            "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, \"added_tokens\": [{\"id\": 3, " +
            "\"content\": \"<s>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, " +
            "\"special\": true}], \"normalizer\": null, \"pre_tokenizer\": null, \"post_processor\": null, " +
            "\"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]}, " +
            "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"byte_fallback\": true, " +
            "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"<s>\": 3, \"<0xC3>\": 4, \"<0xA9>\": 5, \"<0x00>\": 6}, " +
            "\"merges\": [\"a b\"]}}");
        return dir;
    }

    // Greedy ids by argmax over rill_lm_logits of the whole sequence each time
    // (no cache): the session, with its cache and sampler, must give the same.
    static List<int> GreedyByLogits(LanguageModel lm, int[] prompt, int n)
    {
        int vocab = lm.Info.VocabSize;
        var ids = new List<int>(prompt);
        var logits = new float[vocab];
        for (int i = 0; i < n; ++i)
        {
            Errors.Check(Native.rill_lm_logits(lm.Handle, IntPtr.Zero, 1, ids.Count, ids.ToArray(), 1, logits,
                                               (UIntPtr)vocab));
            int best = 0;
            for (int v = 1; v < vocab; ++v) if (logits[v] > logits[best]) best = v;
            ids.Add(best);
        }
        return ids.GetRange(prompt.Length, n);
    }

    static void TestGenerationSession()
    {
        string dir = WriteModelFolder();
        try
        {
            using (var ctx = NewContext())
            using (var lm = new LanguageModel(ctx, dir))
            using (var tokenizer = new Tokenizer(dir))
            {
                var prompt = new[] { 3, 0, 1, 2, 7 };
                var expected = GreedyByLogits(lm, prompt, 10);
                var options = Session.Defaults(lm);
                options.Sampler.Temperature = 0;
                options.MaxNewTokens = 10;
                options.PrefillChunk = 2;
                using (var session = new Session(lm, options))
                {
                    session.SetEosIds();
                    session.AppendIds(prompt);
                    int generated;
                    Assert(session.Step(1, (id, text) => false, out generated) == StopReason.None && generated == 0,
                           "the first step runs a prefill chunk only");
                    StopReason reason;
                    var ids = session.Run(null, out reason);
                    Assert(reason == StopReason.MaxNewTokens, "stops at max_new_tokens, got " + reason);
                    Assert(string.Join(" ", ids) == string.Join(" ", expected),
                           "greedy ids " + string.Join(" ", ids) + " equal argmax of the logits " + string.Join(" ", expected));
                    session.Rewind(prompt.Length + 4);
                    Assert(session.Ids.Length == prompt.Length + 4, "rewind keeps the first tokens");
                    session.Cancel();
                    Assert(session.Step(5, (id, text) => false, out generated) == StopReason.Cancelled && generated == 0,
                           "a cancelled step returns before its first forward pass");
                    var again = session.Run(null, out reason);
                    Assert(string.Join(" ", again.GetRange(0, 6)) == string.Join(" ", expected.GetRange(4, 6)),
                           "after rewind the greedy continuation is the same");
                    Throws<RillInvalidArgumentException>(() => session.AppendIds(40), "an id outside the vocabulary");
                }
                using (var session = new Session(lm, options))
                {
                    session.SetTokenizer(tokenizer);
                    session.SetEosIds();
                    session.AppendText("ab", true);
                    var text = new StringBuilder();
                    StopReason reason;
                    var ids = session.Run(text, out reason);
                    var known = ids.FindAll(id => id < 7).ToArray();
                    var buf = new byte[256];
                    UIntPtr required;
                    Errors.Check(Native.rill_tokenizer_decode(tokenizer.Handle, known, (UIntPtr)known.Length, 1, buf,
                                                              (UIntPtr)buf.Length, out required));
                    string decoded = Encoding.UTF8.GetString(buf, 0, (int)required - 1);
                    Assert(text.ToString() == decoded, "streamed text '" + text + "' equals the decode '" + decoded + "'");
                }
            }
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }

    static void TestVersionAndNames()
    {
        string header = File.ReadAllText(headerPath);
        Func<string, int> part = name => int.Parse(Regex.Match(header, "#define RILL_VERSION_" + name + @" (\d+)").Groups[1].Value);
        Assert(Library.Version == new Version(part("MAJOR"), part("MINOR"), part("PATCH")), "version matches rill.h");
        foreach (Status s in Enum.GetValues(typeof(Status)))
        {
            string expected = s == Status.Ok ? "RILL_OK" : null;
            string name = Library.StatusString(s);
            Assert(expected == null ? name.StartsWith("RILL_ERROR_") : name == expected, "status name " + name);
        }
        Assert(Library.DTypeSize(DType.F32) == 4 && Library.DTypeSize(DType.BF16) == 2, "dtype sizes");
        Assert(Library.DTypeName(DType.F16) == "f16", "dtype name");
        Assert(Library.InfoReport().Contains("cpu"), "info report lists the CPU backend");
    }

    static void TestErrorsAreTypedAndCarryTheMessage()
    {
        var e = Throws<RillConfigException>(() => new Context("[runtime]\nno_such_key = 1\n"), "unknown key");
        Assert(e.Message.Contains("no_such_key") && e.Message == Library.LastError, "message names the key");
        Assert(e.Status == Status.Config, "status");
        Throws<RillIOException>(() => Context.FromFile("/nonexistent/rill.toml"), "missing file");
        using (var ctx = NewContext())
        using (Tensor x = ctx.CreateTensor(DType.F32, 2, 8), w = ctx.CreateTensor(DType.F32, 7))
        {
            var shape = Throws<RillShapeException>(() => ctx.RmsNorm(x, w, 1e-6f, x), "weight of the wrong length");
            Assert(shape.Message.Contains("weight"), "shape message names the argument");
            var nul = Throws<RillInvalidArgumentException>(() => ctx.RmsNorm(null, null, 1e-6f, x), "null x");
            Assert(nul.Message.StartsWith("x:"), "null message names the argument");
            Throws<RillDTypeException>(() => x.WriteBits(new ushort[16]), "bits into an f32 tensor");
            Throws<RillInvalidArgumentException>(() => x.WriteF32(new float[15]), "wrong count");
            Throws<RillShapeException>(() => ctx.CreateTensor(DType.F32, 2, 0), "zero dim");
        }
    }

    static void TestNormsAndResidualAgainstDoubles()
    {
        const int rows = 3, d = 40;
        float[] x0 = Values(rows * d, 1, 2, 0.5), r0 = Values(rows * d, 2, 1), w0 = Values(d, 3, 0.5, 1), b0 = Values(d, 4, 0.3);
        using (var ctx = NewContext())
        using (Tensor x = ctx.CreateTensor(x0, rows, d), r = ctx.CreateTensor(r0, rows, d), w = ctx.CreateTensor(w0, d),
               b = ctx.CreateTensor(b0, d), y = ctx.CreateTensor(DType.F32, rows, d))
        {
            ctx.RmsNorm(x, w, 1e-5f, y);
            var expected = new double[rows * d];
            for (int i = 0; i < rows; ++i)
            {
                double ss = 0;
                for (int k = 0; k < d; ++k) ss += (double)x0[i * d + k] * x0[i * d + k];
                for (int k = 0; k < d; ++k) expected[i * d + k] = x0[i * d + k] / Math.Sqrt(ss / d + 1e-5) * w0[k];
            }
            Close(y.ReadF32(), expected, 1e-4, "rms_norm");

            // residual = 0.5 r + 2 x, then x = layer_norm(residual) * w + b
            ctx.FusedAddLayerNorm(x, r, null, w, b, 1e-5f, 0.5f, 2f);
            var res = new double[rows * d];
            for (int i = 0; i < rows * d; ++i) res[i] = 0.5 * r0[i] + 2.0 * x0[i];
            Close(r.ReadF32(), res, 1e-5, "fused residual");
            for (int i = 0; i < rows; ++i)
            {
                double mean = 0, variance = 0;
                for (int k = 0; k < d; ++k) mean += res[i * d + k] / d;
                for (int k = 0; k < d; ++k) variance += (res[i * d + k] - mean) * (res[i * d + k] - mean) / d;
                for (int k = 0; k < d; ++k)
                    expected[i * d + k] = (res[i * d + k] - mean) / Math.Sqrt(variance + 1e-5) * w0[k] + b0[k];
            }
            Close(x.ReadF32(), expected, 1e-4, "fused layer_norm");
        }
    }

    static void TestGemmAndActivationAgainstDoubles()
    {
        const int rows = 5, k = 24, n = 12;
        float[] a0 = Values(rows * k, 5, 1), w0 = Values(n * k, 6, 0.3), b0 = Values(n, 7, 0.2), c0 = Values(rows * n, 8, 1);
        using (var ctx = NewContext())
        using (Tensor a = ctx.CreateTensor(a0, rows, k), w = ctx.CreateTensor(w0, n, k), b = ctx.CreateTensor(b0, n),
               c = ctx.CreateTensor(c0, rows, n), g = ctx.CreateTensor(DType.F32, rows, n))
        {
            ctx.Gemm(a, w, b, 0.5f, 2f, c);
            var expected = new double[rows * n];
            for (int i = 0; i < rows; ++i)
                for (int j = 0; j < n; ++j)
                {
                    double acc = 0;
                    for (int t = 0; t < k; ++t) acc += (double)a0[i * k + t] * w0[j * k + t];
                    expected[i * n + j] = 0.5 * acc + 2.0 * c0[i * n + j] + b0[j];
                }
            Close(c.ReadF32(), expected, 1e-4, "gemm");

            float[] cOut = c.ReadF32();
            try
            {
                ctx.Activation(ActFn.Silu, c, null, g);
            }
            catch (RillUnsupportedException e) // decoder-layer ops are optional per backend
            {
                Console.WriteLine("  (activation unsupported on " + backend + ": " + e.Message + ")");
                return;
            }
            var silu = new double[rows * n];
            for (int i = 0; i < silu.Length; ++i) silu[i] = cOut[i] / (1 + Math.Exp(-cOut[i]));
            Close(g.ReadF32(), silu, 1e-5, "silu");
        }
    }

    static void TestSixteenBitStorage()
    {
        float[] values = Values(64, 9, 4);
        using (var ctx = NewContext())
        using (Tensor h = ctx.CreateTensor(DType.F16, 64), b = ctx.CreateTensor(DType.BF16, 8, 8))
        {
            h.WriteF32(values);
            b.WriteF32(values);
            var exact = values.Select(v => (double)v).ToArray();
            Close(h.ReadF32(), exact, 4 * 1e-3, "f16 round trip");
            Close(b.ReadF32(), exact, 4 * 8e-3, "bf16 round trip");
            ushort[] bits = b.ReadBits();
            for (int i = 0; i < bits.Length; ++i)  // bf16 is the top half of the f32 bits
            {
                uint f32 = BitConverter.ToUInt32(BitConverter.GetBytes(b.ReadF32()[i]), 0);
                Assert(bits[i] == (ushort)(f32 >> 16), "bf16 bits are the top of the f32 bits");
            }
            b.WriteBits(bits);
            Assert(b.ReadBits().SequenceEqual(bits), "bits write back unchanged");
            Assert(h.NBytes == 128 && b.Shape.SequenceEqual(new long[] { 8, 8 }), "sizes and shape");
        }
    }

    static void TestDecoderStackCachedDecodeMatchesPrefill()
    {
        using (var ctx = NewContext())
        {
            ModelDesc desc = ModelDesc.Defaults();
            Assert(desc.StructSize == 3280 && desc.WeightFormat == DType.F32 && desc.ClipQkv == 0f && desc.RopeTheta == 10000f && desc.RopeBetaFast == 32f &&
                   desc.RopeShortFactor.Length == ModelDesc.RopeMaxFactors, "defaults from rill_model_desc_init");
            desc.NumLayers = 1;
            desc.HiddenSize = 32;
            desc.NumHeads = 4;
            desc.NumKvHeads = 2;
            desc.IntermediateSize = 64;
            using (Model model = ctx.CreateModel(desc))
            {
                var missing = Throws<RillNotFoundException>(() => model.CheckWeights(), "no weights yet");
                Assert(missing.Message.Contains("model.layers.0."), "names the missing weight");
                string p = "model.layers.0.";
                int seed = 20;
                foreach (var wt in new[] { Tuple.Create("self_attn.q_proj.weight", 32, 32), Tuple.Create("self_attn.k_proj.weight", 16, 32),
                                           Tuple.Create("self_attn.v_proj.weight", 16, 32), Tuple.Create("self_attn.o_proj.weight", 32, 32),
                                           Tuple.Create("mlp.gate_proj.weight", 64, 32), Tuple.Create("mlp.up_proj.weight", 64, 32),
                                           Tuple.Create("mlp.down_proj.weight", 32, 64) })
                    model.SetWeight(p + wt.Item1, new long[] { wt.Item2, wt.Item3 }, Values(wt.Item2 * wt.Item3, seed++, 0.2));
                model.SetWeight(p + "input_layernorm.weight", new long[] { 32 }, Values(32, seed++, 0.1, 1));
                model.SetWeight(p + "post_attention_layernorm.weight", new long[] { 32 }, Values(32, seed++, 0.1, 1));
                model.SetWeight("model.norm.weight", new long[] { 32 }, Values(32, seed++, 0.1, 1));
                Throws<RillShapeException>(() => model.SetWeight("model.norm.weight", new long[] { 31 }, new float[31]), "wrong shape");
                var unknown = Throws<RillNotFoundException>(() => model.SetWeight("model.layers.0.no_such.weight", new long[] { 32 }, new float[32]), "unknown weight");
                Assert(unknown.Status == Status.NotFound && unknown.Message.Contains("no_such"), "names the unknown weight");
                model.CheckWeights();

                float[] tokens = Values(3 * 32, 30, 1);
                float[] full;
                using (Tensor h = ctx.CreateTensor(tokens, 1, 3, 32))
                {
                    try
                    {
                        model.Forward(h);
                    }
                    catch (RillUnsupportedException e)
                    {
                        Console.WriteLine("  (decoder stack unsupported on " + backend + ": " + e.Message + ")");
                        return;
                    }
                    full = h.ReadF32();
                }
                using (KvCache cache = model.CreateKvCache(1, 4))
                {
                    using (Tensor h = ctx.CreateTensor(tokens.Take(64).ToArray(), 1, 2, 32)) model.Forward(h, cache);
                    using (Tensor h = ctx.CreateTensor(tokens.Skip(64).ToArray(), 1, 1, 32))
                    {
                        model.Forward(h, cache, new[] { 2 });
                        Close(h.ReadF32(), full.Skip(64).Select(v => (double)v).ToArray(), 1e-4, "decode step");
                    }
                    Assert(cache.Length(0) == 3, "cache length");
                    cache.SetLength(0, 1);
                    Assert(cache.Length(0) == 1, "cache length after SetLength");
                    Throws<RillInvalidArgumentException>(() => cache.Length(5), "sequence out of range");
                }
            }
        }
    }

    // Dispose in any order: the context is destroyed after its children.
    static void TestDisposeOrderAndFinalizers()
    {
        var ctx = NewContext();
        Tensor t = ctx.CreateTensor(new float[] { 1, 2, 3 }, 3);
        ctx.Dispose();
        Throws<ObjectDisposedException>(() => t.ReadF32(), "a tensor of a disposed context");
        t.Dispose();
        t.Dispose();

        using (var ctx2 = NewContext())
        {
            for (int i = 0; i < 200; ++i) ctx2.CreateTensor(DType.F32, 64, 64); // left to the finalizer
            GC.Collect();
            GC.WaitForPendingFinalizers();
            using (Tensor u = ctx2.CreateTensor(new float[] { 3, 4 }, 1, 2), v = ctx2.CreateTensor(DType.F32, 1, 2))
            {
                ctx2.RmsNorm(u, null, 0f, v); // drains what the finalizer queued, on this thread
                Close(v.ReadF32(), new[] { 3 / Math.Sqrt(12.5), 4 / Math.Sqrt(12.5) }, 1e-6, "after finalizers");
            }
        }
    }

    static void TestLogCallback()
    {
        var messages = new List<string>();
        Library.SetLogCallback((level, message) => { lock (messages) messages.Add(level + ": " + message); }, LogLevel.Debug);
        try
        {
            using (NewContext()) { }
        }
        finally
        {
            Library.SetLogCallback(null, LogLevel.Info);
        }
        Assert(messages.Count > 0, "creating a context logs its backend selection");
    }

    static void TestTokenizer()
    {
        // The hand-written tokenizer of tests/tokenizer: one merge "a b", byte
        // fallback for é, <s> added by the template.
        string path = Path.Combine(Path.GetDirectoryName(headerPath), "..", "tests", "tokenizer", "tiny_tokenizer.json");
        using (var tok = new Tokenizer(path))
        {
            Assert(tok.VocabSize == 7, "vocab size");
            Assert(tok.Encode("ab a\u00e9").SequenceEqual(new[] { 3, 2, 6, 0, 4, 5 }), "encode with <s>");
            Assert(tok.Encode("ab", false).SequenceEqual(new[] { 2 }), "encode without special tokens");
            Assert(tok.Decode(new[] { 3, 2, 4, 5 }, true) == "ab\u00e9", "decode skipping <s>");
            Assert(tok.TokenToId("<s>") == 3, "token to id");
            string streamed = "";
            using (var detok = new Detokenizer(tok, true))
            {
                foreach (int id in new[] { 3, 0, 4 }) streamed += detok.Push(id);
                Assert(streamed == "a", "the lone byte waits");
                streamed += detok.Push(5) + detok.Push(1) + detok.Flush();
            }
            Assert(streamed == "a\u00e9b", "stream joins to the decode: " + streamed);
            try
            {
                tok.Decode(new[] { 9 });
                Assert(false, "decode of id 9 throws");
            }
            catch (RillInvalidArgumentException e)
            {
                Assert(e.Message.Contains("vocab_size 7"), "the message names the vocab size: " + e.Message);
            }
        }
        try
        {
            new Tokenizer(path + ".missing");
            Assert(false, "a missing file throws");
        }
        catch (RillIOException) { }
    }
}
