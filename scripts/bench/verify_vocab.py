"""A GGUF whose bytes are nearly all vocabulary: a llama of width 2 (1 layer, 1 head, FFN
4, f16 weights) with a SentencePiece-style vocabulary of `vocab` tokens (the 256 byte
tokens, <unk> <s> </s>, then short distinct pieces), so that model-verify's cost in
vocabulary x tokens shows: X
positions, the file 26 MB. Random weights (seed 0) scaled so the logits are not flat.

Run: PY scripts/bench/verify_vocab.py OUT.gguf [VOCAB (default 850000)]"""
import sys

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType as QT


def main(out, vocab=850_000):
    w = GGUFWriter(out, "llama")
    embd, ff = 2, 4
    w.add_block_count(1)
    w.add_context_length(4096)
    w.add_embedding_length(embd)
    w.add_feed_forward_length(ff)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)
    w.add_vocab_size(vocab)
    w.add_rope_dimension_count(embd)
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    digits = "abcdefghijklmnopqrstuvwxyz0123456789"
    i = 0
    while len(toks) < vocab:
        s, k = "", i
        while True:
            s, k = digits[k % 36] + s, k // 36
            if not k:
                break
        toks.append("\u2581" + s)
        types.append(1)
        i += 1
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    w.add_token_scores([-float(j) for j in range(vocab)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    rng = np.random.default_rng(0)

    def t(name, *shape, scale=1.0):
        a = (scale * rng.standard_normal(shape)).astype(np.float16 if len(shape) == 2 else np.float32)
        w.add_tensor(name, a, raw_dtype=QT.F16 if len(shape) == 2 else QT.F32)

    t("token_embd.weight", vocab, embd)
    w.add_tensor("output_norm.weight", np.ones(embd, np.float32))
    t("output.weight", vocab, embd, scale=3.0)
    for name, shape in (("attn_norm", (embd,)), ("attn_q", (embd, embd)), ("attn_k", (embd, embd)),
                        ("attn_v", (embd, embd)), ("attn_output", (embd, embd)),
                        ("ffn_norm", (embd,)), ("ffn_gate", (ff, embd)), ("ffn_up", (ff, embd)),
                        ("ffn_down", (embd, ff))):
        if len(shape) == 1:
            w.add_tensor(f"blk.0.{name}.weight", np.ones(shape, np.float32))
        else:
            t(f"blk.0.{name}.weight", *shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
