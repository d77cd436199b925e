"""Trains the demo model shipped in models/fortune: a small Llama-type language
model and its byte-level BPE tokenizer, on the fortune cookies of Debian's
`fortunes` package, written as a Hugging Face folder that transformers'
LlamaForCausalLM and PreTrainedTokenizerFast load.

Run it through scripts/train-demo-model.sh, which makes the Python environment
(Debian's torch, plus transformers and tokenizers from PyPI). Seeds and thread
count are fixed, so a rerun on the same machine writes the same files.
"""

import argparse
import json
import math
import os
import random
import time

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (GenerationConfig, LlamaConfig, LlamaForCausalLM,
                          PreTrainedTokenizerFast)

# The files of Debian's `fortunes` package the corpus is made of: sayings and
# short stories. Left out: the ASCII-art files, whose layout a tiny model
# learns as noise, and the files of jokes about groups of people.
FORTUNE_FILES = [
    "computers", "cookie", "education", "food", "fortunes", "goedel", "humorists",
    "kids", "law", "linuxcookie", "literature", "love", "magic", "medicine",
    "miscellaneous", "paradoxum", "people", "pets", "platitudes", "science",
    "tao", "wisdom", "work",
]
BOS, EOS = "<s>", "</s>"
SEED = 1234


def read_fortunes(directory, max_chars):
    """Every fortune of FORTUNE_FILES (separated by a line holding '%'), in file
    order, tabs expanded, short enough to fit a training block."""
    fortunes = []
    for name in FORTUNE_FILES:
        with open(os.path.join(directory, name), encoding="utf-8", errors="strict") as f:
            text = f.read()
        for entry in text.split("\n%\n"):
            entry = entry.strip("\n").expandtabs(8).rstrip()
            if entry and len(entry) <= max_chars:
                fortunes.append(entry)
    return fortunes


def train_tokenizer(fortunes, vocab_size):
    """A byte-level BPE tokenizer (GPT-2 style) that puts <s> before every text."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[BOS, EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(fortunes, trainer=trainer)
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)])
    return tok


def token_stream(tok, fortunes, bos_id, eos_id):
    """All fortunes as one stream: <s> fortune </s> <s> fortune </s> ..."""
    ids = []
    for enc in tok.encode_batch(fortunes, add_special_tokens=False):
        ids += [bos_id] + enc.ids + [eos_id]
    return torch.tensor(ids, dtype=torch.long)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder to write the model into")
    p.add_argument("--fortunes", default="/usr/share/games/fortunes", help="the fortunes package's data folder")
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    started = time.time()

    block, batch = 128, 16
    fortunes = read_fortunes(args.fortunes, max_chars=400)
    tok = train_tokenizer(fortunes, vocab_size=1024)
    bos_id, eos_id = tok.token_to_id(BOS), tok.token_to_id(EOS)
    # The last 2% of the shuffled fortunes are held out to report a loss on
    # text the model did not train on.
    order = list(range(len(fortunes)))
    random.shuffle(order)
    held = max(1, len(order) // 50)
    train_ids = token_stream(tok, [fortunes[i] for i in order[held:]], bos_id, eos_id)
    held_ids = token_stream(tok, [fortunes[i] for i in order[:held]], bos_id, eos_id)
    print(f"corpus: {len(fortunes)} fortunes, {train_ids.numel()} training tokens, "
          f"{held_ids.numel()} held out; vocabulary {tok.get_vocab_size()}", flush=True)

    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=128, intermediate_size=384,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
        bos_token_id=bos_id, eos_token_id=eos_id, tie_word_embeddings=False,
        attn_implementation="eager")
    model = LlamaForCausalLM(config)
    print(f"model: {sum(t.numel() for t in model.parameters())} parameters", flush=True)

    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = 50
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
    gen = torch.Generator().manual_seed(SEED)
    model.train()
    for step in range(args.steps):
        starts = torch.randint(0, train_ids.numel() - block - 1, (batch,), generator=gen)
        x = torch.stack([train_ids[s:s + block] for s in starts])
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}  {time.time() - started:.0f} s", flush=True)
    train_loss = loss.item()

    model.eval()
    with torch.no_grad():
        chunks = held_ids[: (held_ids.numel() // block) * block].view(-1, block)
        held_loss = model(input_ids=chunks, labels=chunks).loss.item()
    print(f"final training loss {train_loss:.3f}, held-out loss {held_loss:.3f}, "
          f"{time.time() - started:.0f} s", flush=True)

    save(model, tok, args.out, bos_id, eos_id)
    check(args.out)


def save(model, tok, out, bos_id, eos_id):
    """The Hugging Face folder: f16 safetensors, config, tokenizer, generation defaults."""
    os.makedirs(out, exist_ok=True)
    model.config.torch_dtype = torch.float16
    model.generation_config = GenerationConfig(
        bos_token_id=bos_id, eos_token_id=eos_id, do_sample=True, temperature=0.8, top_k=40)
    model.half().save_pretrained(out, safe_serialization=True)
    # model_input_names: a Llama takes no token_type_ids, which the tokenizer
    # would otherwise return and generate() refuse.
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS,
                                   model_max_length=model.config.max_position_embeddings,
                                   model_input_names=["input_ids", "attention_mask"])
    fast.save_pretrained(out)
    # Keep the folder to what rill and transformers read.
    for extra in ("special_tokens_map.json",):
        path = os.path.join(out, extra)
        if os.path.exists(path):
            os.remove(path)


def check(out):
    """Loads the folder the way users will (transformers' own classes) and
    greedy-generates from a few prompts: the text must read like fortunes."""
    # generate() asks whether the model is FSDP-managed by importing
    # torch.distributed.fsdp, which fails with Debian's torch 1.13 on Python
    # 3.11; nothing here is distributed, so the answer is no.
    import transformers.generation.utils
    transformers.generation.utils.is_fsdp_managed_module = lambda module: False
    model = LlamaForCausalLM.from_pretrained(out, torch_dtype=torch.float32)
    tok = PreTrainedTokenizerFast.from_pretrained(out)
    with open(os.path.join(out, "config.json")) as f:
        assert json.load(f)["model_type"] == "llama"
    for prompt in ("A fool and his money", "A computer", "Never"):
        enc = tok(prompt, return_tensors="pt")
        assert enc.input_ids[0, 0].item() == tok.bos_token_id, "the tokenizer must add <s>"
        outputs = model.generate(**enc, do_sample=False, max_new_tokens=40, pad_token_id=tok.eos_token_id)
        print(f"--- greedy from {prompt!r}:\n{tok.decode(outputs[0], skip_special_tokens=True)}")


if __name__ == "__main__":
    main()
