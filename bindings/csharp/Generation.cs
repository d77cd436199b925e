// Language models from Hugging Face folders and generation sessions over
// rill_lm_* / rill_session_* (rill.h; Tokenizer.cs wraps rill_tokenizer_*).
// Each wrapper owns its C object and releases it in Dispose; dispose a Session
// before its LanguageModel and Tokenizer, and those before their Context.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Rill
{
    /// <summary>A Hugging Face model folder loaded onto a context (rill_lm).</summary>
    public sealed class LanguageModel : IDisposable
    {
        IntPtr handle;
        readonly Context context;

        public LanguageModel(Context context, string path)
        {
            if (context == null) throw Errors.NullArgument("context");
            if (path == null) throw Errors.NullArgument("path");
            var options = new LmLoadOptions();
            Native.rill_lm_load_options_init(ref options);
            Errors.Check(Native.rill_lm_load(context.Live(), Utf8.Encode(path), ref options, out handle));
            this.context = context;
            Path = path;
        }

        public string Path { get; private set; }

        public IntPtr Handle
        {
            get
            {
                if (handle == IntPtr.Zero) throw new ObjectDisposedException("Rill.LanguageModel");
                return handle;
            }
        }

        public LmInfo Info
        {
            get
            {
                var info = new LmInfo { StructSize = (uint)Marshal.SizeOf(typeof(LmInfo)) };
                Errors.Check(Native.rill_lm_get_info(Handle, ref info));
                return info;
            }
        }

        public void Dispose()
        {
            if (handle == IntPtr.Zero) return;
            context.Synchronize();
            Native.rill_lm_destroy(handle);
            handle = IntPtr.Zero;
        }
    }

    /// <summary>One conversation with a language model (rill_session): Step runs a
    /// bounded number of forward passes and hands each new token (and its text,
    /// with a tokenizer) to a callback.</summary>
    public sealed class Session : IDisposable
    {
        IntPtr handle;
        Func<int, string, bool> onToken;
        Exception callbackError;
        readonly NativeTokenFn nativeOnToken; // kept alive while the session lives

        /// <summary>options: null for the model's defaults (Defaults(lm)).</summary>
        public Session(LanguageModel lm, SessionOptions? options = null)
        {
            if (lm == null) throw Errors.NullArgument("lm");
            var o = options ?? Defaults(lm);
            Errors.Check(Native.rill_session_create(lm.Handle, ref o, out handle));
            nativeOnToken = OnNativeToken;
        }

        /// <summary>rill_session_options_init for lm: sampling from its generation_config.json.</summary>
        public static SessionOptions Defaults(LanguageModel lm)
        {
            var o = new SessionOptions();
            Native.rill_session_options_init(ref o, lm == null ? IntPtr.Zero : lm.Handle);
            return o;
        }

        IntPtr Live()
        {
            if (handle == IntPtr.Zero) throw new ObjectDisposedException("Rill.Session");
            return handle;
        }

        public void SetTokenizer(Tokenizer tokenizer)
        {
            // The session borrows the tokenizer, which must stay undisposed while attached.
            Errors.Check(Native.rill_session_set_tokenizer(
                Live(), tokenizer == null ? IntPtr.Zero : tokenizer.Handle.DangerousGetHandle()));
        }

        public void SetSampler(SamplerParams p) { Errors.Check(Native.rill_session_set_sampler(Live(), ref p)); }
        public void SetEosIds(params int[] ids) { Errors.Check(Native.rill_session_set_eos_ids(Live(), ids, (UIntPtr)ids.Length)); }
        public void AppendIds(params int[] ids) { Errors.Check(Native.rill_session_append_ids(Live(), ids, (UIntPtr)ids.Length)); }
        public void SetIds(params int[] ids) { Errors.Check(Native.rill_session_set_ids(Live(), ids, (UIntPtr)ids.Length)); }
        public void Rewind(int length) { Errors.Check(Native.rill_session_rewind(Live(), length)); }
        public void Cancel() { Native.rill_session_cancel(Live()); }

        public void AppendText(string text, bool addSpecialTokens)
        {
            byte[] bytes = Encoding.UTF8.GetBytes(text ?? "");
            Errors.Check(Native.rill_session_append_text(Live(), bytes, (UIntPtr)bytes.Length, addSpecialTokens ? 1u : 0u));
        }

        public void AddStopString(string text)
        {
            byte[] bytes = Encoding.UTF8.GetBytes(text ?? "");
            Errors.Check(Native.rill_session_add_stop_string(Live(), bytes, (UIntPtr)bytes.Length));
        }

        public int[] Ids
        {
            get
            {
                UIntPtr count;
                if (Native.rill_session_get_ids(Live(), null, UIntPtr.Zero, out count) == Status.Ok) return new int[0];
                var ids = new int[(int)count];
                Errors.Check(Native.rill_session_get_ids(Live(), ids, (UIntPtr)ids.Length, out count));
                return ids;
            }
        }

        /// <summary>Runs at most maxForwards forward passes. callback(id, text) gets each
        /// new token (text null without a tokenizer) and returns true to stop.</summary>
        public StopReason Step(int maxForwards, Func<int, string, bool> callback, out int generated)
        {
            onToken = callback;
            callbackError = null;
            StopReason reason;
            Status status = Native.rill_session_step(Live(), maxForwards, nativeOnToken, IntPtr.Zero, out generated, out reason);
            onToken = null;
            if (callbackError != null) throw callbackError;
            Errors.Check(status);
            return reason;
        }

        /// <summary>Steps until a stop; returns the new token ids and the text.</summary>
        public List<int> Run(StringBuilder text, out StopReason reason)
        {
            var ids = new List<int>();
            int generated;
            do
            {
                reason = Step(16, (id, piece) => { ids.Add(id); if (text != null) text.Append(piece); return false; },
                              out generated);
            } while (reason == StopReason.None);
            return ids;
        }

        int OnNativeToken(IntPtr userData, int token, IntPtr text, UIntPtr textLen)
        {
            try
            {
                string piece = null;
                if (text != IntPtr.Zero)
                {
                    var bytes = new byte[(int)textLen];
                    Marshal.Copy(text, bytes, 0, bytes.Length);
                    piece = Encoding.UTF8.GetString(bytes);
                }
                return onToken != null && onToken(token, piece) ? 1 : 0;
            }
            catch (Exception e) // exceptions must not cross the C frame: rethrown after the step
            {
                callbackError = e;
                return 1;
            }
        }

        public void Dispose()
        {
            if (handle == IntPtr.Zero) return;
            Native.rill_session_destroy(handle);
            handle = IntPtr.Zero;
        }
    }
}
