// Native.cs — P/Invoke declarations of every function of include/rill.h, one
// for one, plus the enums and the rill_model_desc struct with the C layout.
//
// Type mapping: rill_status and the other enums are 32-bit ints; size_t is
// UIntPtr; int64_t* is long[]; int32_t* is int[]; const char* arguments are
// NUL-terminated UTF-8 byte[] (see Utf8.Encode); const char* results are
// IntPtr (borrowed, never freed by the marshaller; see Utf8.Decode). Required
// handle arguments are SafeHandles; optional ones (NULL allowed) are IntPtr.
using System;
using System.Runtime.InteropServices;

namespace Rill
{
    /// <summary>rill_status. Values are fixed forever.</summary>
    public enum Status : int
    {
        Ok = 0,
        InvalidArgument = 1,
        Shape = 2,
        DType = 3,
        OutOfMemory = 4,
        BackendUnavailable = 5,
        Config = 6,
        IO = 7,
        Unsupported = 8,
        Backend = 9,
        Internal = 10,
        NotFound = 11,
    }

    /// <summary>rill_dtype. bf16 and f16 values travel as ushort bits.</summary>
    /// Q8_0 .. Q5_1 are weight-only block formats (GGUF's layouts); see rill.h.
    public enum DType : int { F32 = 0, F16 = 1, BF16 = 2, Q8_0 = 3, Q4_0 = 4, Q4_K = 5, Q5_K = 6, Q6_K = 7, Q5_0 = 8, Q5_1 = 9 }

    /// <summary>rill_log_level.</summary>
    public enum LogLevel : int { Debug = 0, Info = 1, Warning = 2, Error = 3 }

    /// <summary>rill_act_fn.</summary>
    public enum ActFn : int { Silu = 0, Gelu = 1, GeluTanh = 2, Relu = 3 }

    /// <summary>rill_norm_kind.</summary>
    public enum NormKind : int { Rms = 0, Layer = 1 }

    /// <summary>rill_norm_placement.</summary>
    public enum NormPlacement : int { Pre = 0, Post = 1, Sandwich = 2, DeepNorm = 3, Output = 4 }

    /// <summary>rill_qk_norm.</summary>
    public enum QkNorm : int { None = 0, Head = 1, Full = 2, HeadWeights = 3 }

    /// <summary>rill_mlp_activation.</summary>
    public enum MlpActivation : int { SiluGlu = 0, GeluGlu = 1, Gelu = 2, GeluTanh = 3, Relu = 4, GeluTanhGlu = 5 }
    public enum RopeType : int { Default = 0, Linear = 1, Dynamic = 2, Yarn = 3, LongRope = 4, Llama3 = 5 }

    /// <summary>rill_model_desc, field for field. Start from ModelDesc.Defaults().</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct ModelDesc
    {
        public uint StructSize;
        public DType DType;
        public int NumLayers;
        public int HiddenSize;
        public int NumHeads;
        public int NumKvHeads;
        public int HeadDim;
        public int IntermediateSize;
        public NormKind Norm;
        public float NormEps;
        public NormPlacement NormPlacement;
        public MlpActivation Activation;
        public float RopeTheta;
        public int RopeDim;
        public uint QkvBias;
        public uint OBias;
        public uint MlpBias;
        public uint FinalNorm;
        public float ResidualScale;
        public float BranchScale;
        public uint LayerScale;
        public QkNorm QkNorm;
        public float NormWeightOffset;
        public float QueryPreAttnScalar;
        public uint ParallelResidual;
        public int ParallelNorms;
        public int SlidingWindow;
        public int SlidingWindowPattern;
        public int MaxWindowLayers;
        public float AttnLogitSoftcapping;
        public float RopeLocalBaseFreq;
        public RopeType RopeType;
        public float RopeFactor;
        public int MaxPositionEmbeddings;
        public int RopeOriginalMaxPositionEmbeddings;
        public float RopeLowFreqFactor;
        public float RopeHighFreqFactor;
        public float RopeBetaFast;
        public float RopeBetaSlow;
        public float RopeAttentionFactor;
        public int RopeFactorCount;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = RopeMaxFactors)] public float[] RopeShortFactor;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = RopeMaxFactors)] public float[] RopeLongFactor;
        public int NoRopeLayerInterval;
        public int NumExperts;
        public int NumExpertsPerTok;
        public uint NormTopkProb;
        public int MoeIntermediateSize;
        public int SharedExpertIntermediateSize;
        public uint RopeInterleave;
        public int DecoderSparseStep;
        public int MlpOnlyLayerCount;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = MaxMlpOnlyLayers)] public int[] MlpOnlyLayers;
        public DType WeightFormat;
        public float ClipQkv;

        /// <summary>RILL_ROPE_MAX_FACTORS: the length of RopeShortFactor and RopeLongFactor.</summary>
        public const int RopeMaxFactors = 256;
        /// <summary>RILL_MAX_MLP_ONLY_LAYERS: the length of MlpOnlyLayers.</summary>
        public const int MaxMlpOnlyLayers = 256;

        /// <summary>The defaults of rill_model_desc_init; set the sizes next.</summary>
        public static ModelDesc Defaults()
        {
            var desc = new ModelDesc
            {
                RopeShortFactor = new float[RopeMaxFactors],
                RopeLongFactor = new float[RopeMaxFactors],
                MlpOnlyLayers = new int[MaxMlpOnlyLayers],
            };
            Native.rill_model_desc_init(ref desc);
            return desc;
        }

        /// <summary>Parses the [model] table of TOML text (rill_model_desc_from_toml).</summary>
        public static ModelDesc FromToml(string toml, string sourceName = null)
        {
            if (toml == null) throw Errors.NullArgument("toml");
            var desc = Defaults();
            Errors.Check(Native.rill_model_desc_from_toml(Utf8.Encode(toml), Utf8.Encode(sourceName), ref desc));
            return desc;
        }
    }

    /// <summary>rill_vulkan_device, field for field: a host's Vulkan handles. Set StructSize to its size.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct VulkanDevice
    {
        public uint StructSize;
        public IntPtr Instance;
        public IntPtr PhysicalDevice;
        public IntPtr Device;
        public IntPtr Queue;
        public uint QueueFamily;
        public uint Storage16Bit;
    }

    /// <summary>rill_attention_params, field for field. Create it with AttentionParams.Of.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct AttentionParams
    {
        public uint StructSize;
        public float Scale;
        public int Window;
        public float Softcap;

        /// <summary>window 0: none; softcap 0: off.</summary>
        public static AttentionParams Of(float scale, int window, float softcap)
        {
            return new AttentionParams { StructSize = (uint)Marshal.SizeOf(typeof(AttentionParams)), Scale = scale,
                                         Window = window, Softcap = softcap };
        }
    }

    /// <summary>rill_lm_load_options, field for field. Fill with rill_lm_load_options_init.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct LmLoadOptions
    {
        public uint StructSize;
        public uint OverrideDtype;
        public DType Dtype;
        public DType WeightFormat;
        public uint CopyWeights;
    }

    /// <summary>rill_lm_info, field for field. Set StructSize before rill_lm_get_info.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct LmInfo
    {
        public uint StructSize;
        public int VocabSize;
        public int HiddenSize;
        public int NumLayers;
        public int MaxPositionEmbeddings;
        public DType Dtype;
        public int BosTokenId;
        public int EosTokenCount;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 8)] public int[] EosTokenIds;
        public uint DoSample;
        public float Temperature;
        public int TopK;
        public float TopP;
        public float MinP;
        public float RepetitionPenalty;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 64)] public byte[] ModelType;
        public ulong WeightBytes;
        public ulong WeightBytesMapped;
    }

    /// <summary>rill_sampler_params, field for field. SamplerParams.Defaults() holds
    /// rill_sampler_params_init's values.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct SamplerParams
    {
        public uint StructSize;
        public float Temperature;       // 0 = greedy
        public int TopK;                // 0 = off
        public float TopP;              // 1 = off
        public float MinP;              // 0 = off
        public float RepetitionPenalty; // 1 = off
        public float PresencePenalty;   // 0 = off
        public float FrequencyPenalty;  // 0 = off
        public ulong Seed;

        public static SamplerParams Defaults()
        {
            var p = new SamplerParams();
            Native.rill_sampler_params_init(ref p);
            return p;
        }
    }

    /// <summary>rill_session_options, field for field. Fill with rill_session_options_init.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct SessionOptions
    {
        public uint StructSize;
        public int Capacity;
        public int MaxNewTokens;  // 0 = no budget
        public int PrefillChunk;
        public SamplerParams Sampler;
    }

    /// <summary>rill_stop_reason: why rill_session_step returned.</summary>
    public enum StopReason
    {
        None = 0, Eos = 1, StopString = 2, MaxNewTokens = 3, Capacity = 4, Cancelled = 5, Callback = 6,
    }

    /// <summary>int (*rill_token_fn)(void* user_data, int32_t token, const char* text, size_t text_len).</summary>
    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    public delegate int NativeTokenFn(IntPtr userData, int token, IntPtr text, UIntPtr textLen);

    /// <summary>void (*rill_log_fn)(rill_log_level, const char*, void*).</summary>
    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    public delegate void NativeLogFn(LogLevel level, IntPtr message, IntPtr userData);

    /// <summary>The C functions of rill.h. Prefer the wrappers (Context, Tensor, ...).</summary>
    public static class Native
    {
        public const string Library = "rill"; // librill.so on Linux, rill.dll on Windows
        const CallingConvention Cdecl = CallingConvention.Cdecl;

        [DllImport(Library, CallingConvention = Cdecl)] public static extern uint rill_version_number();
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_status_string(Status status);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_last_error();
        [DllImport(Library, CallingConvention = Cdecl)] public static extern UIntPtr rill_dtype_size(DType dtype);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_dtype_name(DType dtype);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern UIntPtr rill_dtype_block_elements(DType dtype);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern UIntPtr rill_dtype_block_bytes(DType dtype);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_set_log_callback(NativeLogFn fn, IntPtr userData, LogLevel minLevel);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_info_report(byte[] configToml, byte[] buf, UIntPtr bufSize, out UIntPtr required);

        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_context_create(byte[] configToml, out ContextHandle ctx);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_context_create_from_file(byte[] path, out ContextHandle ctx);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_context_create_on_vulkan_device(byte[] configToml, ref VulkanDevice device,
                                                                         out ContextHandle ctx);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_context_vulkan_wait(ContextHandle ctx, ulong semaphore, ulong value);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_context_vulkan_signal(ContextHandle ctx, ulong semaphore, ulong value);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_context_destroy(IntPtr ctx);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_context_backend_name(ContextHandle ctx);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_context_device_name(ContextHandle ctx);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_context_selection_report(ContextHandle ctx);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern Status rill_context_synchronize(ContextHandle ctx);
        // For releasing children while the context is closing (a closed SafeHandle cannot be marshalled).
        [DllImport(Library, CallingConvention = Cdecl)] public static extern Status rill_context_synchronize(IntPtr ctx);

        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tensor_create(ContextHandle ctx, DType dtype, int ndim, long[] shape, out TensorHandle tensor);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_tensor_destroy(IntPtr tensor);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tensor_write(TensorHandle tensor, float[] src, UIntPtr bytes);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tensor_write(TensorHandle tensor, ushort[] src, UIntPtr bytes);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tensor_read(TensorHandle tensor, [Out] float[] dst, UIntPtr bytes);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tensor_read(TensorHandle tensor, [Out] ushort[] dst, UIntPtr bytes);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tensor_write_f32(TensorHandle tensor, float[] src, UIntPtr count);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tensor_read_f32(TensorHandle tensor, [Out] float[] dst, UIntPtr count);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern DType rill_tensor_dtype(TensorHandle tensor);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern int rill_tensor_ndim(TensorHandle tensor);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern long rill_tensor_dim(TensorHandle tensor, int index);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern UIntPtr rill_tensor_numel(TensorHandle tensor);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern UIntPtr rill_tensor_nbytes(TensorHandle tensor);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_tensor_context(TensorHandle tensor);

        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_residual_add(ContextHandle ctx, TensorHandle residual, TensorHandle update, IntPtr gain,
                                                      float residualScale, float updateScale);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_rms_norm(ContextHandle ctx, TensorHandle x, IntPtr weight, float eps, TensorHandle output);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_layer_norm(ContextHandle ctx, TensorHandle x, IntPtr weight, IntPtr bias, float eps,
                                                    TensorHandle output);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_fused_add_rms_norm(ContextHandle ctx, TensorHandle x, TensorHandle residual, IntPtr gain,
                                                            IntPtr weight, float eps, float residualScale, float updateScale);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_fused_add_layer_norm(ContextHandle ctx, TensorHandle x, TensorHandle residual, IntPtr gain,
                                                              IntPtr weight, IntPtr bias, float eps, float residualScale,
                                                              float updateScale);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_gemm(ContextHandle ctx, TensorHandle a, TensorHandle w, IntPtr bias, float alpha, float beta,
                                              TensorHandle output);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_get_rows(ContextHandle ctx, TensorHandle table, int[] ids, UIntPtr idCount,
                                                  TensorHandle output);

        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_rope(ContextHandle ctx, TensorHandle x, int[] positions, UIntPtr positionCount, float theta,
                                              int rotaryDim);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_rope_freqs(ContextHandle ctx, TensorHandle x, int[] positions, UIntPtr positionCount,
                                                    float[] invFreq, UIntPtr invFreqCount, float attentionFactor,
                                                    int rotaryDim);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_attention(ContextHandle ctx, TensorHandle q, TensorHandle k, TensorHandle v, int[] kvLengths,
                                                   UIntPtr kvLengthCount, float scale, TensorHandle output);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_attention_ex(ContextHandle ctx, TensorHandle q, TensorHandle k, TensorHandle v,
                                                      int[] kvLengths, UIntPtr kvLengthCount, ref AttentionParams attentionParams,
                                                      TensorHandle output);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_activation(ContextHandle ctx, ActFn fn, TensorHandle x, IntPtr up, TensorHandle output);

        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_model_desc_init(ref ModelDesc desc);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_model_desc_from_toml(byte[] toml, byte[] sourceName, ref ModelDesc desc);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_model_create(ContextHandle ctx, ref ModelDesc desc, out ModelHandle model);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_model_destroy(IntPtr model);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_model_set_weight(ModelHandle model, byte[] name, DType srcDtype, int ndim, long[] shape,
                                                          float[] data, UIntPtr bytes);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_model_set_weight(ModelHandle model, byte[] name, DType srcDtype, int ndim, long[] shape,
                                                          ushort[] data, UIntPtr bytes);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_model_load_safetensors(ModelHandle model, byte[] path);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern Status rill_model_check_weights(ModelHandle model);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_kv_cache_create(ModelHandle model, int batch, int capacity, out KvCacheHandle cache);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_kv_cache_destroy(IntPtr cache);
        [Obsolete("deprecated in rill.h: use rill_kv_cache_get_length")]
        [DllImport(Library, CallingConvention = Cdecl)] public static extern int rill_kv_cache_length(KvCacheHandle cache, int sequence);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_kv_cache_get_length(KvCacheHandle cache, int sequence, out int length);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_kv_cache_set_length(KvCacheHandle cache, int sequence, int length);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_model_forward(ModelHandle model, IntPtr cache, TensorHandle hidden, int[] positions,
                                                       UIntPtr positionCount);

        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_lm_load_options_init(ref LmLoadOptions options);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_lm_load(ContextHandle ctx, byte[] path, ref LmLoadOptions options, out IntPtr lm);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_lm_destroy(IntPtr lm);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_lm_create_shared(ContextHandle ctx, IntPtr source, out IntPtr lm);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern Status rill_lm_get_info(IntPtr lm, ref LmInfo info);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern IntPtr rill_lm_model(IntPtr lm);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_lm_logits(IntPtr lm, IntPtr cache, int batch, int tokens, int[] ids, uint lastOnly,
                                                   float[] logits, UIntPtr logitsCount);

        // Tokenizer
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tokenizer_load(byte[] path, out TokenizerHandle tokenizer);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_tokenizer_destroy(IntPtr tokenizer);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tokenizer_vocab_size(TokenizerHandle tokenizer, out int size);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tokenizer_encode(TokenizerHandle tokenizer, byte[] text, UIntPtr textBytes,
                                                          uint addSpecialTokens, int[] ids, UIntPtr capacity,
                                                          out UIntPtr count);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tokenizer_decode(TokenizerHandle tokenizer, int[] ids, UIntPtr count,
                                                          uint skipSpecialTokens, byte[] buf, UIntPtr bufSize,
                                                          out UIntPtr required);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_tokenizer_token_to_id(TokenizerHandle tokenizer, byte[] token, out int id);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_detokenizer_create(TokenizerHandle tokenizer, uint skipSpecialTokens,
                                                            out DetokenizerHandle detokenizer);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_detokenizer_push(DetokenizerHandle detokenizer, int id, byte[] buf, UIntPtr bufSize,
                                                          out UIntPtr length);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_detokenizer_flush(DetokenizerHandle detokenizer, byte[] buf, UIntPtr bufSize,
                                                           out UIntPtr length);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_detokenizer_destroy(IntPtr detokenizer);

        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_sampler_params_init(ref SamplerParams p);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_sampler_probabilities(ref SamplerParams p, float[] logits, UIntPtr vocabSize, int[] history,
                                                               UIntPtr historyCount, float[] probabilities, UIntPtr probabilityCount);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_sampler_create(ref SamplerParams p, out IntPtr sampler);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_sampler_destroy(IntPtr sampler);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_sampler_sample(IntPtr sampler, float[] logits, UIntPtr vocabSize, int[] history,
                                                        UIntPtr historyCount, out int token);

        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern void rill_session_options_init(ref SessionOptions options, IntPtr lm);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_create(IntPtr lm, ref SessionOptions options, out IntPtr session);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_session_destroy(IntPtr session);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_set_sampler(IntPtr session, ref SamplerParams p);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_set_eos_ids(IntPtr session, int[] ids, UIntPtr count);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_append_ids(IntPtr session, int[] ids, UIntPtr count);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_set_ids(IntPtr session, int[] ids, UIntPtr count);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern Status rill_session_rewind(IntPtr session, int length);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_get_ids(IntPtr session, int[] ids, UIntPtr capacity, out UIntPtr count);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_step(IntPtr session, int maxForwards, NativeTokenFn onToken, IntPtr userData,
                                                      out int generated, out StopReason reason);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern void rill_session_cancel(IntPtr session);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_set_tokenizer(IntPtr session, IntPtr tokenizer);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_append_text(IntPtr session, byte[] text, UIntPtr textBytes, uint addSpecialTokens);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_set_text(IntPtr session, byte[] text, UIntPtr textBytes, uint addSpecialTokens);
        [DllImport(Library, CallingConvention = Cdecl)]
        public static extern Status rill_session_add_stop_string(IntPtr session, byte[] text, UIntPtr textBytes);
        [DllImport(Library, CallingConvention = Cdecl)] public static extern Status rill_session_clear_stop_strings(IntPtr session);
    }

    /// <summary>UTF-8 strings across the boundary.</summary>
    public static class Utf8
    {
        /// <summary>NUL-terminated UTF-8 bytes, or null for a null string.</summary>
        public static byte[] Encode(string s)
        {
            if (s == null) return null;
            int n = System.Text.Encoding.UTF8.GetByteCount(s);
            var bytes = new byte[n + 1];
            System.Text.Encoding.UTF8.GetBytes(s, 0, s.Length, bytes, 0);
            return bytes;
        }

        /// <summary>The borrowed C string at p ("" for NULL), copied.</summary>
        public static string Decode(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) ++n;
            var bytes = new byte[n];
            Marshal.Copy(p, bytes, 0, n);
            return System.Text.Encoding.UTF8.GetString(bytes);
        }
    }
}
