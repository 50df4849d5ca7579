"""Build the tiny trained target, tokenizer and EAGLE-3 drafter of the acceptance fixture.

Everything comes from fixed seeds and this Python's own standard library sources (nothing is
downloaded), on one CPU thread:

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/build_acceptance_fixture.py OUT_DIR

1. corpus: the top-level ``*.py`` files of ``sysconfig.get_paths()["stdlib"]`` in sorted order
   (their sha256 is recorded: another Python version gives another corpus);
2. tokenizer: a byte-level BPE (HF ``tokenizers``) of ``VOCAB`` tokens trained on the corpus;
3. target: a Llama of ``LAYERS`` layers trained for ``TARGET_STEPS`` steps of next-token loss.
   Its final norm is fixed to an uneven gain (log-uniform in [1/8, 8], not trained) so the
   post-norm state differs from the last residual stream, as in released models;
4. drafter: vLLM/SGLang ``LlamaForCausalLMEagle3`` layout (``fc``, ``midlayer``, ``norm``,
   ``lm_head`` over a ``DRAFT_VOCAB`` subset with ``d2t``/``t2d``; the target's embedding shared)
   trained on the target's residual streams ``TRAINED`` (canonical ids) to predict the target's
   greedy token, unrolled over ``DRAFT_STEPS`` chained drafts as EAGLE-3 trains.

``OUT_DIR/manifest.json`` records the command, this script's sha256, the corpus hash, seeds,
step counts, wall times and losses. ``--stage target`` / ``--stage drafter`` run one half (the
drafter reads the target from OUT_DIR), with the same result as one full run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import sysconfig
import time
from pathlib import Path

import torch

SEED = 20261201
VOCAB = 1024
DRAFT_VOCAB = 512
LAYERS = 12
HIDDEN = 64
HEADS = 2
KV_HEADS = 2
HEAD_DIM = 32  # vLLM's CPU attention has no kernel for head_dim 16
INTERMEDIATE = 192
SEQ = 128
BATCH = 16
TARGET_STEPS = 800
TARGET_LR = 3e-3
DRAFT_STEPS = 3  # chained drafts unrolled in training (EAGLE-3's training-time test)
DRAFTER_STEPS = 400
DRAFTER_BATCH = 8  # sequences per drafter step (each runs its own chain)
DRAFTER_LR = 3e-3
TRAINED = (2, 6, 9)  # canonical ids the drafter is trained on: outputs of layers 2, 6, 9
CORPUS_BYTES = 4_000_000


def corpus_files() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(stdlib.glob("*.py"))


def read_corpus() -> tuple[str, str]:
    """The corpus text (files joined, cut at ``CORPUS_BYTES``) and its sha256."""
    parts: list[str] = []
    size = 0
    for f in corpus_files():
        text = f.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        size += len(text)
        if size >= CORPUS_BYTES:
            break
    text = "\n".join(parts)[:CORPUS_BYTES]
    return text, hashlib.sha256(text.encode()).hexdigest()


def train_tokenizer(text: str, out: Path) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    chunks = text.split("\n\n")
    tok.train_from_iterator(chunks, trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "eos_token": "<|endoftext|>",
                "bos_token": "<|endoftext|>",
                "unk_token": "<|endoftext|>",
                "model_max_length": 4096,
            },
            indent=2,
        )
        + "\n"
    )
    return tok


def encode(out: Path, text: str) -> torch.Tensor:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    ids: list[int] = []
    for chunk in text.split("\n\n"):
        ids.extend(tok.encode(chunk + "\n\n").ids)
    return torch.tensor(ids, dtype=torch.long)


def batches(stream: torch.Tensor, gen: torch.Generator, length: int) -> torch.Tensor:
    # held-out tail (last 5%) is never sampled
    limit = int(stream.numel() * 0.95) - length - 1
    starts = torch.randint(0, limit, (BATCH,), generator=gen)
    return torch.stack([stream[s : s + length] for s in starts.tolist()])


def lr_at(step: int, total: int, peak: float) -> float:
    warm = max(1, total // 20)
    if step < warm:
        return peak * (step + 1) / warm
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))


def target_config() -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "max_position_embeddings": 1024,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "torch_dtype": "float32",
    }


def build_target(out: Path, log: dict[str, object]) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    t0 = time.time()
    text, digest = read_corpus()
    train_tokenizer(text, out)
    stream = encode(out, text)
    log.update(corpus_sha256=digest, corpus_tokens=int(stream.numel()), python=sys.version)
    log["tokenizer_seconds"] = round(time.time() - t0, 1)

    torch.manual_seed(SEED)
    config = LlamaConfig(**target_config())
    model = LlamaForCausalLM(config)
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():  # the uneven final norm: log-uniform gains in [1/8, 8], frozen
        gains = torch.exp((torch.rand(HIDDEN, generator=gen) * 2 - 1) * math.log(8.0))
        model.model.norm.weight.copy_(gains)
    model.model.norm.weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=TARGET_LR, weight_decay=0.01, betas=(0.9, 0.95))
    losses = []
    t1 = time.time()
    model.train()
    for step in range(TARGET_STEPS):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, TARGET_STEPS, TARGET_LR)
        x = batches(stream, gen, SEQ + 1)
        loss = model(input_ids=x[:, :-1], labels=x[:, :-1]).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if step % 25 == 0 or step == TARGET_STEPS - 1:
            print(f"target step {step} loss {loss.item():.3f} {time.time() - t1:.0f}s", flush=True)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    for extra in ("generation_config.json",):
        (out / extra).unlink(missing_ok=True)
    log["target_seconds"] = round(time.time() - t1, 1)
    log["target_loss_last50"] = round(sum(losses[-50:]) / 50, 4)


DRAFT_NATIVE_IDS = [2, 6, 9]
"""The drafter's ``eagle_config.eagle_aux_hidden_state_layer_ids`` as SpecForge 0.2.0 writes it
for ``TRAINED``: SpecForge (and SGLang) read them as layer outputs."""


def drafter_config() -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": 1,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "vocab_size": VOCAB,
        "draft_vocab_size": DRAFT_VOCAB,
        "max_position_embeddings": 1024,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": DRAFT_NATIVE_IDS},
        "eagle3_contract": {
            "schema": "eagle3-contracts.stamp/1",
            "layer_ids": list(TRAINED),
            "order": "as_listed",
            "num_layers": LAYERS,
            "hidden_size": HIDDEN,
            "width": len(TRAINED) * HIDDEN,
            "trained_with": "specforge==0.2.0",
            "native_ids": DRAFT_NATIVE_IDS,
            "ids_source": "eagle_config.eagle_aux_hidden_state_layer_ids",
            "target": {"model_type": "llama", "architectures": ["LlamaForCausalLM"]},
            "stamped_by": "scripts/build_acceptance_fixture.py",
        },
    }


def _init_weights(gen: torch.Generator, lm_head: torch.Tensor) -> dict[str, torch.Tensor]:
    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * 0.02

    h, hd = HIDDEN, HEAD_DIM
    return {
        "fc.weight": normal(h, len(TRAINED) * h),
        "midlayer.input_layernorm.weight": torch.ones(h),
        "midlayer.hidden_norm.weight": torch.ones(h),
        "midlayer.self_attn.q_proj.weight": normal(HEADS * hd, 2 * h),
        "midlayer.self_attn.k_proj.weight": normal(KV_HEADS * hd, 2 * h),
        "midlayer.self_attn.v_proj.weight": normal(KV_HEADS * hd, 2 * h),
        "midlayer.self_attn.o_proj.weight": normal(h, HEADS * hd),
        "midlayer.post_attention_layernorm.weight": torch.ones(h),
        "midlayer.mlp.gate_proj.weight": normal(INTERMEDIATE, h),
        "midlayer.mlp.up_proj.weight": normal(INTERMEDIATE, h),
        "midlayer.mlp.down_proj.weight": normal(h, INTERMEDIATE),
        "norm.weight": torch.ones(h),
        "lm_head.weight": lm_head.clone(),
    }


def build_drafter(target_dir: Path, out: Path, log: dict[str, object]) -> None:
    from safetensors.torch import save_file
    from transformers import LlamaForCausalLM

    from eagle3_contracts.acceptance.chain import chain_logits
    from eagle3_contracts.acceptance.drafter import Eagle3Drafter, read_shape
    from eagle3_contracts.capture.hooks import decoder_layers, layer_hooks

    t0 = time.time()
    text, _ = read_corpus()
    stream = encode(target_dir, text)
    target = LlamaForCausalLM.from_pretrained(target_dir).eval().requires_grad_(False)
    layers = decoder_layers(target)
    # draft vocabulary: the DRAFT_VOCAB most frequent tokens of the training part (as SpecForge
    # builds d2t/t2d from token frequencies), in id order
    train = stream[: int(stream.numel() * 0.95)]
    freq = torch.bincount(train, minlength=VOCAB)
    keep = torch.sort(torch.argsort(freq, descending=True, stable=True)[:DRAFT_VOCAB]).values
    t2d = torch.zeros(VOCAB, dtype=torch.bool)
    t2d[keep] = True
    d2t = keep - torch.arange(DRAFT_VOCAB)
    to_draft = torch.full((VOCAB,), -100, dtype=torch.long)
    to_draft[keep] = torch.arange(DRAFT_VOCAB)

    gen = torch.Generator().manual_seed(SEED + 2)
    weights = _init_weights(gen, target.lm_head.weight.detach()[keep])
    config = drafter_config()
    shape = read_shape(config, "drafter", fc_in=len(TRAINED) * HIDDEN)
    drafter = Eagle3Drafter(shape, weights)
    params = list(drafter.parameters())
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=DRAFTER_LR, weight_decay=0.0, betas=(0.9, 0.95))
    embed = target.get_input_embeddings()
    losses = []
    t1 = time.time()
    for step in range(DRAFTER_STEPS):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, DRAFTER_STEPS, DRAFTER_LR)
        x = batches(stream, gen, SEQ)[:DRAFTER_BATCH]
        states: dict[int, torch.Tensor] = {}
        with torch.no_grad(), layer_hooks(layers, states.__setitem__, TRAINED):
            greedy = target(x, use_cache=False).logits.argmax(-1)
        feats = torch.cat([states[i] for i in TRAINED], dim=-1)
        with torch.no_grad():
            embeds = embed(x)
        loss = torch.zeros(())
        anchors = torch.arange(0, SEQ - DRAFT_STEPS)
        for b in range(DRAFTER_BATCH):
            steps = chain_logits(drafter, feats[b], embeds[b], anchors, DRAFT_STEPS)
            for j, logits in enumerate(steps):
                labels = to_draft[greedy[b, anchors + j + 1]]
                ce = torch.nn.functional.cross_entropy(logits, labels, ignore_index=-100)
                loss = loss + (0.8**j) * ce / DRAFTER_BATCH
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if step % 25 == 0 or step == DRAFTER_STEPS - 1:
            print(f"drafter step {step} loss {losses[-1]:.3f} {time.time() - t1:.0f}s", flush=True)
    tensors = {name: drafter.p(name).detach().contiguous() for name in weights}
    tensors["d2t"] = d2t.contiguous()
    tensors["t2d"] = t2d.contiguous()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    log["drafter_seconds"] = round(time.time() - t0, 1)
    log["drafter_loss_last25"] = round(sum(losses[-25:]) / 25, 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--stage", choices=("all", "target", "drafter"), default="all")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    out: Path = args.out
    target_dir, drafter_dir = out / "target", out / "drafter"
    target_dir.mkdir(parents=True, exist_ok=True)
    drafter_dir.mkdir(parents=True, exist_ok=True)
    manifest = out / "manifest.json"
    log: dict[str, object] = json.loads(manifest.read_text()) if manifest.exists() else {}
    log.update(
        command="OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/build_acceptance_fixture.py "
        + str(out),
        script_sha256=hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        torch=torch.__version__,
        seed=SEED,
    )
    if args.stage in ("all", "target"):
        build_target(target_dir, log)
        manifest.write_text(json.dumps(log, indent=2, sort_keys=True) + "\n")
    if args.stage in ("all", "drafter"):
        build_drafter(target_dir, drafter_dir, log)
    manifest.write_text(json.dumps(log, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
