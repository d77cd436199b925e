// Hugging Face tokenizers (rill_tokenizer) and streaming decode
// (rill_detokenizer). Neither belongs to a context, so their handles are plain
// SafeHandles; a Detokenizer keeps its Tokenizer's handle alive.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Rill
{
    public sealed class TokenizerHandle : SafeHandle
    {
        public TokenizerHandle() : base(IntPtr.Zero, true) { }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
        protected override bool ReleaseHandle()
        {
            Native.rill_tokenizer_destroy(handle);
            return true;
        }
    }

    public sealed class DetokenizerHandle : SafeHandle
    {
        TokenizerHandle tokenizer;

        public DetokenizerHandle() : base(IntPtr.Zero, true) { }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        internal void Adopt(TokenizerHandle parent)
        {
            bool added = false;
            parent.DangerousAddRef(ref added);
            tokenizer = parent;
        }

        protected override bool ReleaseHandle()
        {
            Native.rill_detokenizer_destroy(handle);
            if (tokenizer != null) tokenizer.DangerousRelease();
            return true;
        }
    }

    /// <summary>A tokenizer.json (a file, or a folder holding one): Encode, Decode,
    /// TokenToId. Its methods may be called from several threads.</summary>
    public sealed class Tokenizer : IDisposable
    {
        internal readonly TokenizerHandle Handle;

        public Tokenizer(string path)
        {
            TokenizerHandle handle;
            Errors.Check(Native.rill_tokenizer_load(Utf8.Encode(path), out handle));
            Handle = handle;
        }

        public int VocabSize
        {
            get
            {
                int size;
                Errors.Check(Native.rill_tokenizer_vocab_size(Handle, out size));
                return size;
            }
        }

        /// <summary>The ids of text, with the post-processor's special tokens when addSpecialTokens.</summary>
        public int[] Encode(string text, bool addSpecialTokens = true)
        {
            if (text == null) throw new RillInvalidArgumentException("text: expected a string, got null");
            byte[] bytes = Encoding.UTF8.GetBytes(text);
            UIntPtr count;
            uint special = addSpecialTokens ? 1u : 0u;
            Errors.Check(Native.rill_tokenizer_encode(Handle, bytes, (UIntPtr)bytes.Length, special, null, UIntPtr.Zero,
                                                      out count));
            var ids = new int[(int)count];
            Errors.Check(Native.rill_tokenizer_encode(Handle, bytes, (UIntPtr)bytes.Length, special, ids,
                                                      (UIntPtr)ids.Length, out count));
            return ids;
        }

        public string Decode(int[] ids, bool skipSpecialTokens = false)
        {
            if (ids == null) throw new RillInvalidArgumentException("ids: expected an array, got null");
            uint skip = skipSpecialTokens ? 1u : 0u;
            UIntPtr required;
            Errors.Check(Native.rill_tokenizer_decode(Handle, ids, (UIntPtr)ids.Length, skip, null, UIntPtr.Zero,
                                                      out required));
            var buf = new byte[(int)required];
            Errors.Check(Native.rill_tokenizer_decode(Handle, ids, (UIntPtr)ids.Length, skip, buf, (UIntPtr)buf.Length,
                                                      out required));
            return Encoding.UTF8.GetString(buf, 0, (int)required - 1);
        }

        /// <summary>The id of a token string; RillNotFoundException when absent.</summary>
        public int TokenToId(string token)
        {
            int id;
            Errors.Check(Native.rill_tokenizer_token_to_id(Handle, Utf8.Encode(token), out id));
            return id;
        }

        public void Dispose() { Handle.Dispose(); }
    }

    /// <summary>Decodes one id at a time: Push returns the text that became
    /// complete (never half a character); Flush ends the stream.</summary>
    public sealed class Detokenizer : IDisposable
    {
        readonly DetokenizerHandle handle;

        public Detokenizer(Tokenizer tokenizer, bool skipSpecialTokens = false)
        {
            if (tokenizer == null) throw new RillInvalidArgumentException("tokenizer: expected a Tokenizer, got null");
            DetokenizerHandle h;
            Errors.Check(Native.rill_detokenizer_create(tokenizer.Handle, skipSpecialTokens ? 1u : 0u, out h));
            h.Adopt(tokenizer.Handle);
            handle = h;
        }

        public string Push(int id)
        {
            UIntPtr length;
            Errors.Check(Native.rill_detokenizer_push(handle, id, null, UIntPtr.Zero, out length)); // consumes nothing
            var buf = new byte[(int)length + 1];
            Errors.Check(Native.rill_detokenizer_push(handle, id, buf, (UIntPtr)buf.Length, out length));
            return Encoding.UTF8.GetString(buf, 0, (int)length);
        }

        public string Flush()
        {
            UIntPtr length;
            Errors.Check(Native.rill_detokenizer_flush(handle, null, UIntPtr.Zero, out length));
            var buf = new byte[(int)length + 1];
            Errors.Check(Native.rill_detokenizer_flush(handle, buf, (UIntPtr)buf.Length, out length));
            return Encoding.UTF8.GetString(buf, 0, (int)length);
        }

        public void Dispose() { handle.Dispose(); }
    }
}
