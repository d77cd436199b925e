// Rill.cs — the C# binding's object layer over Native.cs: SafeHandles that
// release rill's objects in the right order, exceptions from statuses, and
// Context / Tensor / Model / KvCache classes that mirror the C API.
//
// Ownership: a tensor or model holds a reference on its context's handle, and
// a KV cache one on its model's, so a parent is released only after its
// children (SafeHandle reference counting), whatever order Dispose and the
// garbage collector run in. rill's objects are externally synchronized per
// context, but finalizers run on their own thread: a child reached only by the
// finalizer is not destroyed there but queued on its context and destroyed by
// the next call on that context (or with the context). Dispose() destroys at
// once on the calling thread: prefer `using`.
using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;

namespace Rill
{
    // ------------------------------------------------------------------ errors

    /// <summary>A failed rill call: Status and rill_last_error()'s message.</summary>
    public class RillException : Exception
    {
        public Status Status { get; private set; }
        public RillException(Status status, string message) : base(message) { Status = status; }
    }

    public class RillInvalidArgumentException : RillException
    { public RillInvalidArgumentException(string m) : base(Status.InvalidArgument, m) { } }
    public class RillShapeException : RillException { public RillShapeException(string m) : base(Status.Shape, m) { } }
    public class RillDTypeException : RillException { public RillDTypeException(string m) : base(Status.DType, m) { } }
    public class RillOutOfMemoryException : RillException
    { public RillOutOfMemoryException(string m) : base(Status.OutOfMemory, m) { } }
    public class RillBackendUnavailableException : RillException
    { public RillBackendUnavailableException(string m) : base(Status.BackendUnavailable, m) { } }
    public class RillConfigException : RillException { public RillConfigException(string m) : base(Status.Config, m) { } }
    public class RillIOException : RillException { public RillIOException(string m) : base(Status.IO, m) { } }
    public class RillUnsupportedException : RillException
    { public RillUnsupportedException(string m) : base(Status.Unsupported, m) { } }
    public class RillBackendException : RillException { public RillBackendException(string m) : base(Status.Backend, m) { } }
    public class RillInternalException : RillException { public RillInternalException(string m) : base(Status.Internal, m) { } }
    /// <summary>A named thing does not exist or has not been set (a model weight).</summary>
    public class RillNotFoundException : RillException { public RillNotFoundException(string m) : base(Status.NotFound, m) { } }

    public static class Errors
    {
        /// <summary>The exception for a status and message (one class per status).</summary>
        public static RillException ForStatus(Status status, string message)
        {
            switch (status)
            {
                case Status.InvalidArgument: return new RillInvalidArgumentException(message);
                case Status.Shape: return new RillShapeException(message);
                case Status.DType: return new RillDTypeException(message);
                case Status.OutOfMemory: return new RillOutOfMemoryException(message);
                case Status.BackendUnavailable: return new RillBackendUnavailableException(message);
                case Status.Config: return new RillConfigException(message);
                case Status.IO: return new RillIOException(message);
                case Status.Unsupported: return new RillUnsupportedException(message);
                case Status.Backend: return new RillBackendException(message);
                case Status.Internal: return new RillInternalException(message);
                case Status.NotFound: return new RillNotFoundException(message);
                default: return new RillException(status, message + " (unknown rill_status " + (int)status + ")");
            }
        }

        /// <summary>Throws unless status is Ok, with rill_last_error()'s message.</summary>
        public static void Check(Status status)
        {
            if (status != Status.Ok) throw ForStatus(status, Utf8.Decode(Native.rill_last_error()));
        }

        internal static RillInvalidArgumentException NullArgument(string name)
        {
            return new RillInvalidArgumentException(name + ": expected a value, got null");
        }
    }

    // ----------------------------------------------------------------- handles

    /// <summary>Owns a rill_context*. Destroys the children the finalizer queued first.</summary>
    public sealed class ContextHandle : SafeHandle
    {
        readonly ConcurrentQueue<ChildHandle> pending = new ConcurrentQueue<ChildHandle>();

        public ContextHandle() : base(IntPtr.Zero, true) { }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        /// <summary>Queues a child the finalizer released. Once the context is closed
        /// nobody else uses it, so the queue is drained here.</summary>
        internal void Defer(ChildHandle child)
        {
            pending.Enqueue(child);
            if (closing) DrainPending();
        }

        // Set once Dispose or the finalizer has run. IsClosed is not enough: it
        // stays false while children still hold references.
        volatile bool closing;
        internal bool IsClosing { get { return closing || IsClosed; } }

        /// <summary>Closing (Dispose or the finalizer) destroys the queued children, whose
        /// references keep the context itself alive until then.</summary>
        protected override void Dispose(bool disposing)
        {
            closing = true;
            base.Dispose(disposing);
            DrainPending();
        }

        /// <summary>Destroys children queued by finalizers; called on the thread using the context.</summary>
        internal void DrainPending()
        {
            ChildHandle child;
            while (pending.TryDequeue(out child)) child.DestroyNow();
        }

        protected override bool ReleaseHandle()
        {
            DrainPending();
            Native.rill_context_destroy(handle);
            return true;
        }
    }

    /// <summary>A handle whose object lives in a parent (a context or a model).</summary>
    public abstract class ChildHandle : SafeHandle
    {
        SafeHandle parent;
        ContextHandle context;
        internal volatile bool Explicit; // set by Dispose(): destroy on the calling thread

        protected ChildHandle() : base(IntPtr.Zero, true) { }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        // Set once Dispose or the finalizer has run (IsClosed stays false while
        // a child of this handle still holds a reference).
        volatile bool closing;
        internal bool IsClosing { get { return closing || IsClosed; } }

        protected override void Dispose(bool disposing)
        {
            closing = true;
            base.Dispose(disposing);
        }

        internal void Adopt(SafeHandle parentHandle, ContextHandle contextHandle)
        {
            bool added = false;
            parentHandle.DangerousAddRef(ref added);
            parent = parentHandle;
            context = contextHandle;
        }

        protected abstract void Destroy(IntPtr raw);

        internal void DestroyNow()
        {
            // Work queued on a GPU backend may still use the object. The context
            // is alive: this child holds a reference on it (or on its model).
            Native.rill_context_synchronize(context.DangerousGetHandle());
            Destroy(handle);
            parent.DangerousRelease();
        }

        protected override bool ReleaseHandle()
        {
            if (parent == null) return true; // creation failed before Adopt
            if (Explicit) DestroyNow();
            else context.Defer(this);
            return true;
        }
    }

    public sealed class TensorHandle : ChildHandle
    {
        protected override void Destroy(IntPtr raw) { Native.rill_tensor_destroy(raw); }
    }

    public sealed class ModelHandle : ChildHandle
    {
        protected override void Destroy(IntPtr raw) { Native.rill_model_destroy(raw); }
    }

    public sealed class KvCacheHandle : ChildHandle
    {
        protected override void Destroy(IntPtr raw) { Native.rill_kv_cache_destroy(raw); }
    }

    /// <summary>What Tensor, Model and KvCache share: their handle, and Dispose()
    /// that destroys the object at once on the calling thread.</summary>
    public abstract class ChildObject<THandle> : IDisposable where THandle : ChildHandle
    {
        internal readonly THandle Handle;

        internal ChildObject(THandle handle) { Handle = handle; }

        public THandle SafeHandle { get { return Handle; } }

        public void Dispose()
        {
            Handle.Explicit = true;
            Handle.Dispose();
        }

        /// <summary>The handle, after checking this object and its context are open
        /// (Context.Live destroys what finalizers queued).</summary>
        internal THandle Live(Context context)
        {
            if (Handle.IsClosing) throw new ObjectDisposedException(GetType().FullName);
            context.Live();
            return Handle;
        }
    }

    // ----------------------------------------------------------------- library

    /// <summary>Library-wide calls of rill.h.</summary>
    public static class Library
    {
        // Kept alive while librill may call it (the field is read by nobody; the GC must see it).
#pragma warning disable 414
        static NativeLogFn logTrampoline;
#pragma warning restore 414

        public static uint VersionNumber { get { return Native.rill_version_number(); } }
        public static Version Version
        {
            get { uint v = VersionNumber; return new Version((int)(v / 10000), (int)(v / 100 % 100), (int)(v % 100)); }
        }
        public static string StatusString(Status status) { return Utf8.Decode(Native.rill_status_string(status)); }
        public static string LastError { get { return Utf8.Decode(Native.rill_last_error()); } }
        public static int DTypeSize(DType dtype) { return (int)Native.rill_dtype_size(dtype); }
        public static string DTypeName(DType dtype) { return Utf8.Decode(Native.rill_dtype_name(dtype)); }
        public static int DTypeBlockElements(DType dtype) { return (int)Native.rill_dtype_block_elements(dtype); }
        public static int DTypeBlockBytes(DType dtype) { return (int)Native.rill_dtype_block_bytes(dtype); }

        /// <summary>Routes log messages to fn (null: the default, stderr per RILL_LOG).
        /// fn may be called from any thread that uses rill.</summary>
        public static void SetLogCallback(Action<LogLevel, string> fn, LogLevel minLevel)
        {
            NativeLogFn trampoline = null;
            if (fn != null) trampoline = (level, message, user) => fn(level, Utf8.Decode(message));
            Errors.Check(Native.rill_set_log_callback(trampoline, IntPtr.Zero, minLevel));
            logTrampoline = trampoline;
        }

        /// <summary>The report `rill info` prints.</summary>
        public static string InfoReport(string configToml = null)
        {
            byte[] config = Utf8.Encode(configToml);
            UIntPtr required;
            Errors.Check(Native.rill_info_report(config, null, UIntPtr.Zero, out required));
            var buf = new byte[(int)required];
            Errors.Check(Native.rill_info_report(config, buf, required, out required));
            return System.Text.Encoding.UTF8.GetString(buf, 0, Array.IndexOf(buf, (byte)0));
        }
    }

    // ----------------------------------------------------------------- context

    /// <summary>One backend device and its queue (rill_context).</summary>
    public sealed class Context : IDisposable
    {
        internal readonly ContextHandle Handle;

        /// <summary>configToml: TOML text (see rill.h), or null for the defaults.</summary>
        public Context(string configToml = null)
        {
            ContextHandle h;
            Errors.Check(Native.rill_context_create(Utf8.Encode(configToml), out h));
            Handle = h;
        }

        Context(ContextHandle h) { Handle = h; }

        public static Context FromFile(string path)
        {
            if (path == null) throw Errors.NullArgument("path");
            ContextHandle h;
            Errors.Check(Native.rill_context_create_from_file(Utf8.Encode(path), out h));
            return new Context(h);
        }

        /// <summary>The raw rill_context* for calls through Native.</summary>
        public ContextHandle SafeHandle { get { return Handle; } }
        public string BackendName { get { return Utf8.Decode(Native.rill_context_backend_name(Live())); } }
        public string DeviceName { get { return Utf8.Decode(Native.rill_context_device_name(Live())); } }
        public string SelectionReport { get { return Utf8.Decode(Native.rill_context_selection_report(Live())); } }

        public void Synchronize() { Errors.Check(Native.rill_context_synchronize(Live())); }

        /// <summary>Releases the context once its tensors and models are released.</summary>
        public void Dispose() { Handle.Dispose(); }

        /// <summary>The handle, after destroying what finalizers queued (this is the owning thread).</summary>
        internal ContextHandle Live()
        {
            if (Handle.IsClosing) throw new ObjectDisposedException("Rill.Context");
            Handle.DrainPending();
            return Handle;
        }

        public Tensor CreateTensor(DType dtype, params long[] shape)
        {
            if (shape == null) throw Errors.NullArgument("shape");
            TensorHandle h;
            Errors.Check(Native.rill_tensor_create(Live(), dtype, shape.Length, shape, out h));
            h.Adopt(Handle, Handle);
            return new Tensor(this, h);
        }

        /// <summary>A new f32 tensor holding values (shape's product must equal values.Length).</summary>
        public Tensor CreateTensor(float[] values, params long[] shape)
        {
            Tensor t = CreateTensor(DType.F32, shape);
            try { t.WriteF32(values); }
            catch { t.Dispose(); throw; }
            return t;
        }

        public Model CreateModel(ModelDesc desc)
        {
            ModelHandle h;
            Errors.Check(Native.rill_model_create(Live(), ref desc, out h));
            h.Adopt(Handle, Handle);
            return new Model(this, h);
        }

        // Operators (see rill.h for each contract). Optional tensors may be null.

        public void ResidualAdd(Tensor residual, Tensor update, Tensor gain = null, float residualScale = 1f,
                                float updateScale = 1f)
        {
            Errors.Check(Native.rill_residual_add(Live(), Tensor.Req(residual, "residual"), Tensor.Req(update, "update"),
                                                  Tensor.Opt(gain), residualScale, updateScale));
            GC.KeepAlive(gain);
        }

        public void RmsNorm(Tensor x, Tensor weight, float eps, Tensor output)
        {
            Errors.Check(Native.rill_rms_norm(Live(), Tensor.Req(x, "x"), Tensor.Opt(weight), eps, Tensor.Req(output, "output")));
            GC.KeepAlive(weight);
        }

        public void LayerNorm(Tensor x, Tensor weight, Tensor bias, float eps, Tensor output)
        {
            Errors.Check(Native.rill_layer_norm(Live(), Tensor.Req(x, "x"), Tensor.Opt(weight), Tensor.Opt(bias), eps,
                                                Tensor.Req(output, "output")));
            GC.KeepAlive(weight);
            GC.KeepAlive(bias);
        }

        public void FusedAddRmsNorm(Tensor x, Tensor residual, Tensor gain, Tensor weight, float eps,
                                    float residualScale = 1f, float updateScale = 1f)
        {
            Errors.Check(Native.rill_fused_add_rms_norm(Live(), Tensor.Req(x, "x"), Tensor.Req(residual, "residual"),
                                                        Tensor.Opt(gain), Tensor.Opt(weight), eps, residualScale, updateScale));
            GC.KeepAlive(gain);
            GC.KeepAlive(weight);
        }

        public void FusedAddLayerNorm(Tensor x, Tensor residual, Tensor gain, Tensor weight, Tensor bias, float eps,
                                      float residualScale = 1f, float updateScale = 1f)
        {
            Errors.Check(Native.rill_fused_add_layer_norm(Live(), Tensor.Req(x, "x"), Tensor.Req(residual, "residual"),
                                                          Tensor.Opt(gain), Tensor.Opt(weight), Tensor.Opt(bias), eps,
                                                          residualScale, updateScale));
            GC.KeepAlive(gain);
            GC.KeepAlive(weight);
            GC.KeepAlive(bias);
        }

        public void Gemm(Tensor a, Tensor w, Tensor bias, float alpha, float beta, Tensor output)
        {
            Errors.Check(Native.rill_gemm(Live(), Tensor.Req(a, "a"), Tensor.Req(w, "w"), Tensor.Opt(bias), alpha, beta,
                                          Tensor.Req(output, "output")));
            GC.KeepAlive(bias);
        }

        public void Rope(Tensor x, int[] positions, float theta, int rotaryDim)
        {
            if (positions == null) throw Errors.NullArgument("positions");
            Errors.Check(Native.rill_rope(Live(), Tensor.Req(x, "x"), positions, (UIntPtr)positions.Length, theta, rotaryDim));
        }

        /// <summary>RoPE with the inverse frequencies given and cos, sin scaled (rill_rope_freqs).</summary>
        public void RopeFreqs(Tensor x, int[] positions, float[] invFreq, float attentionFactor, int rotaryDim)
        {
            if (positions == null) throw Errors.NullArgument("positions");
            if (invFreq == null) throw Errors.NullArgument("invFreq");
            Errors.Check(Native.rill_rope_freqs(Live(), Tensor.Req(x, "x"), positions, (UIntPtr)positions.Length, invFreq,
                                                (UIntPtr)invFreq.Length, attentionFactor, rotaryDim));
        }

        /// <summary>kvLengths: one per sequence, or null for "every sequence holds S keys".</summary>
        public void Attention(Tensor q, Tensor k, Tensor v, int[] kvLengths, float scale, Tensor output)
        {
            Errors.Check(Native.rill_attention(Live(), Tensor.Req(q, "q"), Tensor.Req(k, "k"), Tensor.Req(v, "v"), kvLengths,
                                               (UIntPtr)(kvLengths == null ? 0 : kvLengths.Length), scale,
                                               Tensor.Req(output, "output")));
        }

        /// <summary>Attention with a sliding window (0 = none) and logit soft-cap (0 = off).</summary>
        public void AttentionEx(Tensor q, Tensor k, Tensor v, int[] kvLengths, AttentionParams attentionParams, Tensor output)
        {
            Errors.Check(Native.rill_attention_ex(Live(), Tensor.Req(q, "q"), Tensor.Req(k, "k"), Tensor.Req(v, "v"), kvLengths,
                                                  (UIntPtr)(kvLengths == null ? 0 : kvLengths.Length), ref attentionParams,
                                                  Tensor.Req(output, "output")));
        }

        public void Activation(ActFn fn, Tensor x, Tensor up, Tensor output)
        {
            Errors.Check(Native.rill_activation(Live(), fn, Tensor.Req(x, "x"), Tensor.Opt(up), Tensor.Req(output, "output")));
            GC.KeepAlive(up);
        }
    }

    // ------------------------------------------------------------------ tensor

    /// <summary>A row-major contiguous array of 1 to 4 dims in one context (rill_tensor).</summary>
    public sealed class Tensor : ChildObject<TensorHandle>
    {
        public Context Context { get; private set; }

        internal Tensor(Context context, TensorHandle handle) : base(handle) { Context = context; }

        internal static TensorHandle Req(Tensor t, string name)
        {
            if (t == null) throw Errors.NullArgument(name);
            if (t.Handle.IsClosing) throw new ObjectDisposedException("Rill.Tensor", name + ": the tensor is disposed");
            return t.Handle;
        }

        /// <summary>The raw pointer of an optional operand (Zero for null); keep t alive across the call.</summary>
        internal static IntPtr Opt(Tensor t)
        {
            if (t == null) return IntPtr.Zero;
            if (t.Handle.IsClosing) throw new ObjectDisposedException("Rill.Tensor");
            return t.Handle.DangerousGetHandle();
        }

        public DType DType { get { return Native.rill_tensor_dtype(Req(this, "tensor")); } }
        public int NDim { get { return Native.rill_tensor_ndim(Req(this, "tensor")); } }
        public long Dim(int index) { return Native.rill_tensor_dim(Req(this, "tensor"), index); }
        public long NumEl { get { return (long)Native.rill_tensor_numel(Req(this, "tensor")); } }
        public long NBytes { get { return (long)Native.rill_tensor_nbytes(Req(this, "tensor")); } }
        public long[] Shape
        {
            get
            {
                var shape = new long[NDim];
                for (int i = 0; i < shape.Length; ++i) shape[i] = Dim(i);
                return shape;
            }
        }

        /// <summary>Float values, converted to the tensor's dtype; values.Length must equal NumEl.</summary>
        public void WriteF32(float[] values)
        {
            if (values == null) throw Errors.NullArgument("values");
            Context.Live();
            Errors.Check(Native.rill_tensor_write_f32(Req(this, "tensor"), values, (UIntPtr)values.Length));
        }

        public float[] ReadF32()
        {
            Context.Live();
            var values = new float[NumEl];
            Errors.Check(Native.rill_tensor_read_f32(Req(this, "tensor"), values, (UIntPtr)values.Length));
            return values;
        }

        /// <summary>The raw 16-bit values of an f16 or bf16 tensor.</summary>
        public void WriteBits(ushort[] bits)
        {
            if (bits == null) throw Errors.NullArgument("bits");
            RequireSixteenBit("WriteBits");
            Errors.Check(Native.rill_tensor_write(Req(this, "tensor"), bits, (UIntPtr)(2L * bits.Length)));
        }

        public ushort[] ReadBits()
        {
            RequireSixteenBit("ReadBits");
            var bits = new ushort[NumEl];
            Errors.Check(Native.rill_tensor_read(Req(this, "tensor"), bits, (UIntPtr)(2L * bits.Length)));
            return bits;
        }

        void RequireSixteenBit(string method)
        {
            Context.Live();
            DType d = DType;
            if (d != DType.F16 && d != DType.BF16)
                throw new RillDTypeException(method + ": expected an f16 or bf16 tensor, got " + Library.DTypeName(d) +
                                             " (use WriteF32/ReadF32)");
        }
    }

    // ------------------------------------------------------------------- model

    /// <summary>A decoder stack with its weights (rill_model).</summary>
    public sealed class Model : ChildObject<ModelHandle>
    {
        public Context Context { get; private set; }

        internal Model(Context context, ModelHandle handle) : base(handle) { Context = context; }

        ModelHandle Live() { return Live(Context); }

        /// <summary>Sets one weight (a Hugging Face name, see rill.h) from f32 values of its shape.</summary>
        public void SetWeight(string name, long[] shape, float[] values)
        {
            if (name == null) throw Errors.NullArgument("name");
            if (shape == null) throw Errors.NullArgument("shape");
            if (values == null) throw Errors.NullArgument("values");
            Errors.Check(Native.rill_model_set_weight(Live(), Utf8.Encode(name), DType.F32, shape.Length, shape, values,
                                                      (UIntPtr)(4L * values.Length)));
        }

        /// <summary>Sets one weight from f16 or bf16 bits (srcDtype says which).</summary>
        public void SetWeight(string name, DType srcDtype, long[] shape, ushort[] bits)
        {
            if (name == null) throw Errors.NullArgument("name");
            if (shape == null) throw Errors.NullArgument("shape");
            if (bits == null) throw Errors.NullArgument("bits");
            if (srcDtype != DType.F16 && srcDtype != DType.BF16)
                throw new RillDTypeException("srcDtype: expected F16 or BF16 for ushort bits, got " + srcDtype);
            Errors.Check(Native.rill_model_set_weight(Live(), Utf8.Encode(name), srcDtype, shape.Length, shape, bits,
                                                      (UIntPtr)(2L * bits.Length)));
        }

        public void LoadSafetensors(string path)
        {
            if (path == null) throw Errors.NullArgument("path");
            Errors.Check(Native.rill_model_load_safetensors(Live(), Utf8.Encode(path)));
        }

        public void CheckWeights() { Errors.Check(Native.rill_model_check_weights(Live())); }

        public KvCache CreateKvCache(int batch, int capacity)
        {
            KvCacheHandle h;
            Errors.Check(Native.rill_kv_cache_create(Live(), batch, capacity, out h));
            h.Adopt(Handle, Context.Handle);
            return new KvCache(this, h);
        }

        /// <summary>Runs hidden [B, T, D] through the stack in place. cache null: a plain
        /// prefill. positions: B*T RoPE positions, or null for the defaults.</summary>
        public void Forward(Tensor hidden, KvCache cache = null, int[] positions = null)
        {
            IntPtr rawCache = IntPtr.Zero;
            if (cache != null)
            {
                if (cache.Handle.IsClosing) throw new ObjectDisposedException("Rill.KvCache", "cache: the cache is disposed");
                rawCache = cache.Handle.DangerousGetHandle();
            }
            Errors.Check(Native.rill_model_forward(Live(), rawCache, Tensor.Req(hidden, "hidden"), positions,
                                                   (UIntPtr)(positions == null ? 0 : positions.Length)));
            GC.KeepAlive(cache);
        }
    }

    /// <summary>Cached keys and values of a model's layers for a batch of sequences.</summary>
    public sealed class KvCache : ChildObject<KvCacheHandle>
    {
        public Model Model { get; private set; }

        internal KvCache(Model model, KvCacheHandle handle) : base(handle) { Model = model; }

        KvCacheHandle Live() { return Live(Model.Context); }

        /// <summary>Tokens cached for a sequence.</summary>
        public int Length(int sequence)
        {
            int n;
            Errors.Check(Native.rill_kv_cache_get_length(Live(), sequence, out n));
            return n;
        }

        public void SetLength(int sequence, int length) { Errors.Check(Native.rill_kv_cache_set_length(Live(), sequence, length)); }
    }
}
