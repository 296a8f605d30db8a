"""Build a tiny random-initialised chat model offline (no hub): a byte-level tokenizer made
with `tokenizers`, a ChatML template, and a ~100k-parameter Qwen2 model."""

from __future__ import annotations

from pathlib import Path

# The reply follows the prompt directly, as a plain language model sees text: what a tiny
# model can learn to copy from in a few hundred steps (the learning tests use it).
PLAIN_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_tiny_model(
    path: Path,
    seed: int = 0,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 4,
    chars: bool = False,
    template: str = CHAT_TEMPLATE,
    alphabet: str | None = None,
) -> Path:
    """``chars=False``: byte-level BPE without merges (any text); ``chars=True``: one token per
    printable ASCII character (a 103-token vocabulary: what a tiny model can explore), or per
    character of ``alphabet`` when given (the RLVP experiments: a ~30-token vocabulary)."""
    import string

    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    charset = set(alphabet or string.printable) if chars else pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(charset))}
    for token in SPECIALS:
        vocab[token] = len(vocab)
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    if chars:
        raw.decoder = decoders.Fuse()
    else:
        raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        raw.decoder = decoders.ByteLevel()
    raw.add_special_tokens(SPECIALS)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=template
    )
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(vocab),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<|endoftext|>"],
    )
    model = Qwen2ForCausalLM(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
