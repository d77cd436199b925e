"""rill's tokenizer against Hugging Face tokenizers (PyPI), which is the reference.

Trains small tokenizers of each kind that shipping decoders use with the
tokenizers library, saves each tokenizer.json, loads it in rill, and compares
on a corpus of many scripts, emoji, combining marks, whitespace and digit runs
and unusual code points:
  * encode, with and without the special tokens of the post-processor;
  * decode of the reference's ids and of random id sequences, with and without
    skip_special_tokens;
  * streaming decode: the pieces, joined, equal the reference's decode.
Every difference is a failure; the first one of each check is printed with
both id lists. A folder whose tokenizer_config.json sets add_bos_token,
add_eos_token and an extra added token is compared with transformers'
LlamaTokenizerFast. Negative controls then break one thing in the file rill reads
(NFC dropped, merge priorities reversed, ByteLevel's add_prefix_space
flipped) and
require the comparison to find differences. Last, encode throughput of both on
the corpus, as a ratio.

Run with the reference venv's python:
  tokenizer_reference.py --library build/lib/librill.so --bindings bindings/python
Exit codes: 0 passed, 1 failed, 77 skipped (tokenizers or librill missing).
"""
import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time

SKIP = 77

CORPUS = [
    "Hello, world! This is a simple test of the tokenizer.",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX! A well-known, state-of-the-art e-mail; x-y.",
    "Ça va? Déjà vu — naïve café, Ångström, Œuvre, straße, İstanbul, ΣΊΣΥΦΟΣ, Łódź, Dvořák.",
    "Привет, как дела? Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ελληνικά: Καλημέρα κόσμε, ωραία μέρα σήμερα.",
    "العربية: مرحبا بالعالم، كيف حالك؟ ١٢٣",
    "עברית: שלום עולם, מה שלומך?",
    "हिन्दी: नमस्ते दुनिया, क्या हाल है? ४२",
    "ภาษาไทย: สวัสดีชาวโลก ยินดีต้อนรับ",
    "中文：你好，世界！今天天气很好。日本語：こんにちは世界、カタカナとひらがな。",
    "한국어: 안녕하세요 세계, 반갑습니다.",
    "Emoji: 👍 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵🇺🇸 ❤️ 🧑🏿‍💻 😀😃😄 🤷‍♀️",
    "Combining: e\u0301 a\u0308 n\u0303 A\u030a o\u0308\u0304 \u1100\u1161\u11a8 Cafe\u0301 nai\u0308ve \u0915\u094d\u0937",
    "Whitespace:  two  spaces,\tTab\t\ttabs\nnewline\n\n\nthree\r\nCRLF \u00a0NBSP\u3000ideographic\u2009thin   \n  trailing   ",
    "Digits: 1 12 123 1234 12345 3.14159 1,000,000 007 ٠١٢٣ ४२ 0x1F 2024-01-01 ½ ²³ Ⅻ",
    "Odd: \ufffd \ue000\uf8ff \U000f0000 \ufdd0 \uffff \U0010ffff \ud7ff NUL:\x00:end \x01\x1f\x7f \u0085 \u200b\u200d\ufeff",
    "Contractions: I'm, you're, he's, she'll, we've, they'd, It's, DON'T, I'M, You'Re, 'S 'T 'LL 'Ve",
    "Case folding in (?i:'s|'t|...): x'ſt y'ST z'Ll w'\u212aa it’s 'ſ 'ſt 'K 'ǅ 'ΣΑΣ ß ẞ 'İ 'ı K ﬆ 'ﬅ 'Dz",
    "Specials: <s>Hello</s> <|endoftext|>x<|endoftext|> a<|im_start|>user\nhi<|im_end|>\n"
    "<|begin_of_text|><|begin_of_text|>text <unk> <|tool|>  spaced  <|tool|>zzword zzwordy",
    "def f(x):\n    return x ** 2  # comment\n\nclass A:\n\tpass\n",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbb ............ !!!!!!!! ________",
    "", " ", "  ", "a", "\n", " leading", "trailing ", "ΣΑΣ σας ὈΔΥΣΣΕΎΣ",
]

def scrambled_texts(count, seed=7):
    """Random strings of the corpus's characters (specials' pieces included),
    for the combinations the hand-written lines miss."""
    rng = random.Random(seed)
    alphabet = sorted(set("".join(CORPUS)))
    words = " ".join(CORPUS).split(" ")
    texts = []
    for _ in range(count):
        parts = [rng.choice(words) if rng.random() < 0.5 else "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 6)))
                 for _ in range(rng.randrange(1, 10))]
        texts.append(rng.choice(["", " ", "  ", "\n"]).join(parts))
    return texts


TRAINING_TEXT = CORPUS * 3 + [
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
    "All happy families are alike; each unhappy family is unhappy in its own way.",
    "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse.",
    "In the beginning was the word, and the numbers 1 2 3 4 5 6 7 8 9 10 100 1000 followed.",
] * 5

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def train(tk, model, trainer_kwargs, setup, json_edit=None):
    """A tokenizer trained on TRAINING_TEXT: setup(tokenizer) adds the
    components, json_edit(dict) sets what the trainer does not carry over."""
    tokenizer = tk.Tokenizer(model)
    setup(tokenizer)
    trainer = tk.trainers.BpeTrainer(show_progress=False, **trainer_kwargs)
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer)
    data = json.loads(tokenizer.to_str())
    if json_edit:
        json_edit(data)
    return data


def add_byte_tokens(data):
    """SentencePiece-style vocabularies hold <0x00>..<0xFF>."""
    vocab = data["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    for b in range(256):
        name = "<0x{:02X}>".format(b)
        if name not in vocab:
            vocab[name] = next_id
            next_id += 1


def build_tokenizers(tk):
    pre, norm, dec, proc, models = tk.pre_tokenizers, tk.normalizers, tk.decoders, tk.processors, tk.models
    byte_alphabet = pre.ByteLevel.alphabet()
    kinds = {}

    def gpt2(t):
        t.pre_tokenizer = pre.ByteLevel(add_prefix_space=False)
        t.decoder = dec.ByteLevel()
        t.post_processor = proc.ByteLevel(trim_offsets=False)

    def gpt2_extras(data):
        data["added_tokens"].append({"id": len(data["model"]["vocab"]), "content": "<|tool|>", "single_word": False,
                                     "lstrip": True, "rstrip": True, "normalized": False, "special": False})
        data["added_tokens"].append({"id": len(data["model"]["vocab"]) + 1, "content": "zzword", "single_word": True,
                                     "lstrip": False, "rstrip": False, "normalized": True, "special": False})

    kinds["gpt2"] = train(tk, models.BPE(), dict(vocab_size=700, special_tokens=["<|endoftext|>"],
                                                  initial_alphabet=byte_alphabet), gpt2, gpt2_extras)

    def gpt2_prefix(t):
        gpt2(t)
        t.pre_tokenizer = pre.ByteLevel(add_prefix_space=True)

    kinds["gpt2_prefix_space"] = train(tk, models.BPE(), dict(vocab_size=600, special_tokens=["<|endoftext|>"],
                                                               initial_alphabet=byte_alphabet), gpt2_prefix)

    def llama3(t):
        t.pre_tokenizer = pre.Sequence([pre.Split(tk.Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
                                        pre.ByteLevel(add_prefix_space=False, use_regex=False)])
        t.decoder = dec.ByteLevel()

    def llama3_edit(data):
        data["model"]["ignore_merges"] = True
        bos = [t for t in data["added_tokens"] if t["content"] == "<|begin_of_text|>"][0]["id"]
        data["post_processor"] = json.loads(proc.Sequence([
            proc.ByteLevel(trim_offsets=False),
            proc.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", bos)]),
        ]).__getstate__())

    kinds["llama3"] = train(tk, models.BPE(), dict(vocab_size=800, special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                                    initial_alphabet=byte_alphabet), llama3, llama3_edit)

    def qwen2(t):
        t.normalizer = norm.NFC()
        t.pre_tokenizer = pre.Sequence([pre.Split(tk.Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
                                        pre.ByteLevel(add_prefix_space=False, use_regex=False)])
        t.decoder = dec.ByteLevel()
        t.post_processor = proc.ByteLevel(trim_offsets=False)

    kinds["qwen2"] = train(tk, models.BPE(), dict(vocab_size=800, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                                   initial_alphabet=byte_alphabet), qwen2)

    sp_specials = ["<unk>", "<s>", "</s>"]

    def sp_model_edit(data):
        data["model"].update(byte_fallback=True, fuse_unk=True, unk_token="<unk>")
        add_byte_tokens(data)
        data["post_processor"] = json.loads(proc.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", 1)]).__getstate__())

    def llama2(t):
        t.normalizer = norm.Sequence([norm.Prepend("▁"), norm.Replace(" ", "▁")])
        t.decoder = dec.Sequence([dec.Replace("▁", " "), dec.ByteFallback(), dec.Fuse(), dec.Strip(" ", 1, 0)])

    kinds["llama2"] = train(tk, models.BPE(unk_token="<unk>"), dict(vocab_size=500, special_tokens=sp_specials,
                                                                    limit_alphabet=120), llama2, sp_model_edit)

    def metaspace(t):
        t.pre_tokenizer = pre.Metaspace(replacement="▁", prepend_scheme="first", split=True)
        t.decoder = dec.Sequence([dec.ByteFallback(), dec.Metaspace(replacement="▁", prepend_scheme="first")])

    kinds["metaspace"] = train(tk, models.BPE(unk_token="<unk>"), dict(vocab_size=500, special_tokens=sp_specials,
                                                                       limit_alphabet=120), metaspace, sp_model_edit)

    def misc(t):
        t.normalizer = norm.Sequence([norm.NFKD(), norm.Lowercase(), norm.Replace(tk.Regex(r"\s+"), " "), norm.Strip()])
        t.pre_tokenizer = pre.Sequence([pre.Digits(individual_digits=True), pre.Punctuation(),
                                        pre.Metaspace(replacement="▁", prepend_scheme="always", split=True)])
        t.decoder = dec.Metaspace(replacement="▁", prepend_scheme="always")

    def misc_edit(data):
        data["model"].update(unk_token="<unk>", fuse_unk=False)

    def splits(t):
        t.normalizer = norm.Sequence([norm.NFKC(), norm.Replace("``", '"'), norm.Strip(left=True, right=False)])
        t.pre_tokenizer = pre.Sequence([
            pre.Split("-", behavior="merged_with_previous"),
            pre.Split(tk.Regex(r"[.,;]"), behavior="merged_with_next"),
            pre.Split(tk.Regex(r"\p{Lu}"), behavior="contiguous", invert=True),
            pre.Split(tk.Regex(r"[!?]+"), behavior="removed"),
            pre.Digits(individual_digits=False),
            pre.WhitespaceSplit(),
        ])
        t.decoder = dec.Sequence([dec.Replace("_", " "), dec.Strip(" ", 0, 1)])
        t.post_processor = proc.RobertaProcessing(sep=("</s>", 2), cls=("<s>", 1))

    kinds["splits"] = train(tk, models.BPE(unk_token="<unk>"), dict(vocab_size=500, special_tokens=sp_specials,
                                                                    limit_alphabet=150), splits, misc_edit)

    def whitespace(t):
        t.normalizer = norm.NFD()
        t.pre_tokenizer = pre.Whitespace()
        t.post_processor = proc.BertProcessing(sep=("</s>", 2), cls=("<s>", 1))

    kinds["whitespace"] = train(tk, models.BPE(unk_token="<unk>"), dict(vocab_size=500, special_tokens=sp_specials,
                                                                        limit_alphabet=150), whitespace, misc_edit)

    kinds["misc"] = train(tk, models.BPE(unk_token="<unk>"), dict(vocab_size=400, special_tokens=sp_specials,
                                                                  limit_alphabet=100), misc, misc_edit)
    return kinds


def piece_tokenizers(tk, kinds):
    """Tokenizers whose every pre-tokenized piece of the corpus is one token
    (ignore_merges, a vocabulary of the pieces tokenizers' own pre-tokenizer
    gives, plus the byte alphabet): their ids show rill's pieces exactly, so
    a regex that cuts differently (PCRE2 against Oniguruma) always shows,
    which merges can hide in the trained tokenizers."""
    pieces_of = {}
    for name in ("gpt2", "llama3", "qwen2"):
        data = copy.deepcopy(kinds[name])
        reference = tk.Tokenizer.from_str(json.dumps(data))
        vocab = {c: i for i, c in enumerate(tk.pre_tokenizers.ByteLevel.alphabet())}
        for text in CORPUS + scrambled_texts(150):
            if reference.normalizer is not None:
                text = reference.normalizer.normalize_str(text)
            for piece, _ in reference.pre_tokenizer.pre_tokenize_str(text):
                vocab.setdefault(piece, len(vocab))
        data["model"].update(vocab=vocab, merges=[], ignore_merges=True)
        data["added_tokens"] = []
        data["post_processor"] = None
        pieces_of[name + "_pieces"] = data
    return pieces_of



def compare(tk, rill, name, data, folder, random_decodes=200, quiet=False):
    """Compares rill with tokenizers on data (a tokenizer.json dict); returns
    the number of differences (the first of each check printed)."""
    path = os.path.join(folder, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    ref = tk.Tokenizer.from_file(path)
    mine = rill.Tokenizer(path)
    failures = {}

    def differ(check, text, expected, got):
        failures[check] = failures.get(check, 0) + 1
        if failures[check] == 1 and not quiet:
            print("  {} {}: first difference on {!r}\n    tokenizers: {!r}\n    rill:       {!r}".format(
                name, check, text, expected, got))

    largest_id = max(ref.get_vocab(with_added_tokens=True).values())
    if mine.vocab_size != largest_id + 1:
        differ("vocab_size (largest id + 1)", "", largest_id + 1, mine.vocab_size)
    for text in CORPUS + scrambled_texts(150):
        for special in (True, False):
            expected = ref.encode(text, add_special_tokens=special).ids
            got = mine.encode(text, add_special_tokens=special)
            if got != expected:
                differ("encode(add_special_tokens={})".format(special), text, expected, got)
            for skip in (False, True):
                want = ref.decode(expected, skip_special_tokens=skip)
                have = mine.decode(expected, skip_special_tokens=skip)
                if have != want:
                    differ("decode(skip_special_tokens={})".format(skip), expected, want, have)
                pieces = list(mine.stream(expected, skip_special_tokens=skip))
                if "".join(pieces) != want:
                    differ("stream(skip_special_tokens={})".format(skip), expected, want, pieces)
    rng = random.Random(1234)
    vocab = largest_id + 1
    for _ in range(random_decodes):
        ids = [rng.randrange(vocab) for _ in range(rng.randrange(1, 12))]
        for skip in (False, True):
            want = ref.decode(ids, skip_special_tokens=skip)
            if mine.decode(ids, skip_special_tokens=skip) != want:
                differ("decode(random ids, skip_special_tokens={})".format(skip), ids, want,
                       mine.decode(ids, skip_special_tokens=skip))
            pieces = list(mine.stream(ids, skip_special_tokens=skip))
            if "".join(pieces) != want:
                differ("stream(random ids, skip_special_tokens={})".format(skip), ids, want, pieces)
    mine.close()
    return sum(failures.values())


def negative_controls(tk, rill, kinds, folder):
    """Each broken file must make the comparison fail; returns the controls
    that did not."""
    controls = []

    no_nfc = copy.deepcopy(kinds["qwen2"])
    no_nfc["normalizer"] = None
    controls.append(("qwen2 without its NFC normalizer", "qwen2", no_nfc))

    reversed_merges = copy.deepcopy(kinds["gpt2"])
    reversed_merges["model"]["merges"].reverse()
    controls.append(("gpt2 with its merge priorities reversed", "gpt2", reversed_merges))

    flipped = copy.deepcopy(kinds["gpt2_prefix_space"])
    flipped["pre_tokenizer"]["add_prefix_space"] = False
    controls.append(("gpt2 with ByteLevel's add_prefix_space ignored", "gpt2_prefix_space", flipped))

    case_sensitive = copy.deepcopy(kinds["llama3_pieces"])
    split = case_sensitive["pre_tokenizer"]["pretokenizers"][0]
    split["pattern"]["Regex"] = split["pattern"]["Regex"].replace("(?i:", "(?:")
    controls.append(("llama3 pieces without (?i:...) around the contractions", "llama3_pieces", case_sensitive))

    not_failing = []
    for title, reference_name, broken in controls:
        # The reference reads the intact file, rill the broken one.
        ref_path = os.path.join(folder, reference_name + ".json")
        broken_path = os.path.join(folder, "broken.json")
        with open(broken_path, "w", encoding="utf-8") as f:
            json.dump(broken, f, ensure_ascii=False)
        ref = tk.Tokenizer.from_file(ref_path)
        mine = rill.Tokenizer(broken_path)
        differences = sum(ref.encode(t).ids != mine.encode(t) for t in CORPUS)
        print("negative control: {}: {} of {} texts differ".format(title, differences, len(CORPUS)))
        if differences == 0:
            not_failing.append(title)
        mine.close()
    return not_failing


def check_tool(tk, tool, folder, name):
    """`rill tokenize --model FOLDER --text TEXT` prints the ids that
    tokenizers' encode gives with its special tokens; returns the differences."""
    model_folder = os.path.join(folder, name + "_model")
    os.makedirs(model_folder, exist_ok=True)
    with open(os.path.join(folder, name + ".json"), encoding="utf-8") as f:
        data = f.read()
    with open(os.path.join(model_folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(data)
    ref = tk.Tokenizer.from_str(data)
    differences = 0
    for text in CORPUS:
        if "\x00" in text or not text:
            continue  # argv cannot carry U+0000; an empty --text is covered by the library checks
        run = subprocess.run([tool, "tokenize", "--model", model_folder, "--text", text], capture_output=True, text=True)
        expected = " ".join(str(i) for i in ref.encode(text).ids)
        if run.returncode != 0 or run.stdout != expected + "\n":
            differences += 1
            if differences == 1:
                print("  rill tokenize {}: first difference on {!r}\n    tokenizers: {}\n    rill:       {!r} {}".format(
                    name, text, expected, run.stdout, run.stderr.strip()))
    return differences


def check_tokenizer_config(rill, kinds, folder):
    """A Llama 2 folder whose tokenizer.json has no post-processor: rill reads
    add_bos_token / add_eos_token and an extra added token from
    tokenizer_config.json as transformers' LlamaTokenizerFast does (the
    reference). Returns the number of differences, or None without transformers."""
    try:
        import transformers
    except ImportError:
        print("tokenizer_config.json: not checked (transformers is not importable)")
        return None
    data = copy.deepcopy(kinds["llama2"])
    data["post_processor"] = None
    extra_id = max(max(data["model"]["vocab"].values()), max(t["id"] for t in data["added_tokens"])) + 1
    model_folder = os.path.join(folder, "llama2_config_model")
    os.makedirs(model_folder, exist_ok=True)
    with open(os.path.join(model_folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    added = {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
             for t in data["added_tokens"]}
    added[str(extra_id)] = {"content": "<extra_tok>", "lstrip": False, "normalized": False, "rstrip": False,
                            "single_word": False, "special": True}
    config = {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": True, "add_eos_token": True,
              "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "added_tokens_decoder": added,
              "model_max_length": 1000000}
    with open(os.path.join(model_folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)
    ref = transformers.AutoTokenizer.from_pretrained(model_folder)
    mine = rill.Tokenizer(model_folder)
    differences = 0
    for text in CORPUS + ["a<extra_tok>b", "<extra_tok>"]:
        for special in (True, False):
            expected = ref(text, add_special_tokens=special)["input_ids"]
            got = mine.encode(text, add_special_tokens=special)
            if got != expected:
                differences += 1
                if differences == 1:
                    print("  tokenizer_config.json: first difference on {!r}\n    transformers: {}\n    rill:         {}"
                          .format(text, expected, got))
    mine.close()
    return differences


def throughput(tk, rill, folder, name):
    path = os.path.join(folder, name + ".json")
    ref = tk.Tokenizer.from_file(path)
    mine = rill.Tokenizer(path)
    text = "\n".join(CORPUS) * 40
    megabytes = len(text.encode("utf-8")) / 1e6

    def best_of(fn, runs=3):
        best = float("inf")
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        return best

    t_ref = best_of(lambda: ref.encode(text))
    t_mine = best_of(lambda: mine.encode(text))
    mine.close()
    return megabytes / t_ref, megabytes / t_mine


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", required=True, help="librill.so")
    parser.add_argument("--bindings", required=True, help="bindings/python")
    parser.add_argument("--tool", help="the rill tool, to check `rill tokenize` too")
    parser.add_argument("--venv", help="the reference venv, whose python is used when this one lacks tokenizers")
    args = parser.parse_args()
    venv_python = os.path.join(args.venv, "bin", "python") if args.venv else None
    # One thread for the reference too, so that the throughput ratio compares like with like.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ["RAYON_NUM_THREADS"] = "1"
    try:
        import tokenizers as tk
    except ImportError as e:
        if venv_python and os.path.exists(venv_python) and os.path.realpath(sys.prefix) != os.path.realpath(args.venv):
            os.execv(venv_python, [venv_python] + sys.argv)
        print("skipped: PyPI tokenizers is not importable ({}); run with the reference venv's python".format(e))
        return SKIP
    if not os.path.exists(args.library):
        print("skipped: {} does not exist".format(args.library))
        return SKIP
    os.environ["RILL_LIBRARY"] = args.library
    sys.path.insert(0, args.bindings)
    import rill

    print("tokenizers {} as the reference".format(tk.__version__))
    kinds = build_tokenizers(tk)
    kinds.update(piece_tokenizers(tk, kinds))
    total = 0
    with tempfile.TemporaryDirectory() as folder:
        for name, data in kinds.items():
            differences = compare(tk, rill, name, data, folder)
            print("{}: {} differences ({} texts with 10 checks each, 200 random id sequences with 4)".format(
                name, differences, len(CORPUS) + 150))
            total += differences
        if args.tool:
            for name in ("llama3", "llama2"):
                differences = check_tool(tk, args.tool, folder, name)
                print("rill tokenize, {}: {} differences".format(name, differences))
                total += differences
        differences = check_tokenizer_config(rill, kinds, folder)
        if differences is not None:
            print("tokenizer_config.json (add_bos_token, add_eos_token, added_tokens_decoder) against transformers "
                  "{}: {} differences".format(__import__("transformers").__version__, differences))
            total += differences
        not_failing = negative_controls(tk, rill, kinds, folder)
        for name in ("gpt2", "llama3", "llama2"):
            ref_rate, rill_rate = throughput(tk, rill, folder, name)
            print("encode throughput {}: tokenizers {:.2f} MB/s, rill {:.2f} MB/s, rill/tokenizers {:.2f}".format(
                name, ref_rate, rill_rate, rill_rate / ref_rate))
    if not_failing:
        print("FAILED: negative controls that found no difference: {}".format(", ".join(not_failing)))
        return 1
    if total:
        print("FAILED: {} differences from the references".format(total))
        return 1
    print("passed: rill matches tokenizers on every check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
