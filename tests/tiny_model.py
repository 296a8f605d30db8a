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


def build_tool_calling_model(path: Path, replies: list[str], template: str) -> Path:
    """A tiny model that answers every assistant turn with one of ``replies`` (equal odds), then
    ends its turn: each reply is one added token, and the weights are set by hand so that after
    any other token the model picks a reply token, and after a reply token the end of turn.

    With a tool-calling ``template`` and replies written as that template's tool calls, a
    trainer's own tool loop sees real tool calls from a real model, offline and in a few tokens.
    """
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    for token in SPECIALS:
        vocab[token] = len(vocab)
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.add_special_tokens(SPECIALS)
    raw.add_tokens([AddedToken(r, normalized=False, special=False) for r in replies])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=template
    )
    reply_ids = [raw.token_to_id(r) for r in replies]
    end = vocab["<|im_end|>"]
    hidden = 8
    config = Qwen2Config(
        vocab_size=raw.get_vocab_size(),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        eos_token_id=end,
        pad_token_id=vocab["<|endoftext|>"],
    )
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():
        # The layers add nothing to the residual stream, so the last position's state is its
        # token's embedding: dimension 0 marks "any token", dimension 1 "a reply token".
        layer = model.model.layers[0]
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
        embed = model.model.embed_tokens.weight
        embed.zero_()
        embed[:, 0] = 1.0
        embed[reply_ids, 0] = 0.0
        embed[reply_ids, 1] = 1.0
        head = model.lm_head.weight
        head.zero_()
        head[reply_ids, 0] = 20.0  # after any other token: a reply (e^-56 left for the rest)
        head[end, 1] = 20.0  # after a reply: end of turn
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
