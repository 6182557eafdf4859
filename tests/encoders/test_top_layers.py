"""Top layers: spectral normalisation of their dense layers, MC-dropout passes, and the seeded
fine-tuning loop on cached states."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.top_layers import TopLayerRanker, dense_layers
from probrank.encoders.top_layers_fit import fine_tune_top_layers, length_bucketed_batches
from probrank.exceptions import InputDataError
from probrank.nn.heads import build_head

CONTEXTS = ["how do i install the kernel", "no", "sound fix", "why error", "help what"] * 4
RESPONSES = ["sudo apt get update", "yes", "it works thanks", "no", "reboot"] * 4
LABELS = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0] * 4)


@pytest.fixture(scope="module")
def encoder(tiny_bert: Path) -> HiddenStateEncoder:
    return HiddenStateEncoder(tiny_bert, frozen_layers=1, dtype="float32", show_progress=False)


@pytest.fixture(scope="module")
def packed(encoder: HiddenStateEncoder) -> PackedStates:
    return encoder.encode_pairs(CONTEXTS, RESPONSES)


def _sigmas(module: torch.nn.Module) -> list[float]:
    return [
        float(torch.linalg.matrix_norm(linear.weight.detach().double(), ord=2))
        for linear in dense_layers(module)
    ]


def test_the_bound_holds_for_every_dense_layer(
    encoder: HiddenStateEncoder, packed: PackedStates
) -> None:
    bound = 0.1  # the tiny random BERT's dense layers have spectral norms of 0.21-0.24
    top = encoder.top_layers(spectral_bound=bound, spectral_mode="absolute").double()
    before = [
        float(torch.linalg.matrix_norm(m.weight.detach().double(), ord=2))
        for m in dense_layers(encoder.model.encoder.layer[1])
    ]
    assert len(before) == 6 and min(before) > bound  # query, key, value, 3 projections
    states, mask = packed.padded(range(len(packed)), dtype=torch.float64)
    top.train()
    for _ in range(100):  # one power-iteration step per training forward pass
        top(states, mask)
    for sigma in _sigmas(top):
        assert sigma == pytest.approx(bound, rel=1e-4)


def test_relative_bound_starts_at_the_pretrained_function_and_stops_growth(
    encoder: HiddenStateEncoder, packed: PackedStates
) -> None:
    plain = encoder.top_layers().double().eval()
    bounded = encoder.top_layers(spectral_bound=1.0).double().eval()
    pretrained = _sigmas(plain)
    assert bounded.bounds == pytest.approx(pretrained, rel=1e-12)
    states, mask = packed.padded(range(len(packed)), dtype=torch.float64)
    torch.testing.assert_close(bounded(states, mask), plain(states, mask), rtol=1e-12, atol=0)
    # try hard to grow every weight: its spectral norm stays at its pretrained value
    bounded.train()
    target = torch.randn(len(packed), 32, dtype=torch.float64)
    optimizer = torch.optim.Adam(bounded.parameters(), lr=0.01)
    for _ in range(60):
        loss = -(bounded(states, mask) * target).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        for _ in range(100):  # let the power iteration catch up with the last update
            bounded(states, mask)
    for sigma, limit in zip(_sigmas(bounded), pretrained, strict=True):
        assert sigma == pytest.approx(limit, rel=1e-4)
    unconstrained = [
        float(torch.linalg.matrix_norm(m.parametrizations.weight.original.detach().double(), ord=2))
        for m in dense_layers(bounded)
    ]
    # the raw weights grew far beyond their pretrained norms: the bound did the work
    assert all(u > 2 * p for u, p in zip(unconstrained, pretrained, strict=True))


def test_bad_spectral_settings_are_input_data_errors(encoder: HiddenStateEncoder) -> None:
    with pytest.raises(InputDataError, match="spectral_bound"):
        encoder.top_layers(spectral_bound=0.0)
    with pytest.raises(InputDataError, match="spectral_mode"):
        encoder.top_layers(spectral_bound=1.0, spectral_mode="sideways")


def test_mc_dropout_passes_differ_and_repeat_with_the_seed(
    encoder: HiddenStateEncoder, packed: PackedStates
) -> None:
    head = build_head("deterministic", encoder.hidden_size, hidden=8, seed=0)
    ranker = TopLayerRanker(encoder.top_layers(spectral_bound=1.0), head)  # type: ignore[arg-type]
    state = torch.random.get_rng_state()
    first = ranker.sample_logits(packed, 4, seed=3, batch_size=3)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global stream is untouched
    assert first.shape == (4, len(packed))
    assert float((first[0] - first[1]).abs().max()) > 0  # dropout is on
    torch.testing.assert_close(ranker.sample_logits(packed, 4, seed=3, batch_size=3), first)
    assert not torch.equal(ranker.sample_logits(packed, 4, seed=4, batch_size=3), first)
    # no power-iteration step was taken: evaluation outputs are unchanged by the passes
    before = ranker.pooled(packed)
    ranker.sample_logits(packed, 2, seed=0)
    torch.testing.assert_close(ranker.pooled(packed), before, rtol=0, atol=0)


def test_length_buckets_cover_every_sequence_once() -> None:
    lengths = torch.randint(1, 50, (103,), generator=torch.Generator().manual_seed(0))
    batches = length_bucketed_batches(lengths, 8, torch.Generator().manual_seed(1), 4)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(103))
    assert all(len(b) <= 8 for b in batches)
    spread = [int(lengths[b].max() - lengths[b].min()) for b in batches]
    plain = length_bucketed_batches(lengths, 8, torch.Generator().manual_seed(1), 1)
    plain_spread = [int(lengths[b].max() - lengths[b].min()) for b in plain]
    assert sum(spread) < sum(plain_spread)  # buckets group similar lengths


def _fit(encoder: HiddenStateEncoder, packed: PackedStates, kind: str, seed: int) -> tuple:
    options = {"gamma": 1.0, "num_features": 16} if kind == "gpf" else {}
    head = build_head(kind, encoder.hidden_size, hidden=8, seed=seed, **options)
    bound = 1.0 if kind == "gpf" else None
    ranker = TopLayerRanker(encoder.top_layers(spectral_bound=bound, seed=seed), head)  # type: ignore[arg-type]
    seen: list[int] = []
    penalty = None
    if kind == "gpf":
        output = head.gp.output  # type: ignore[attr-defined]
        penalty = lambda: output.prior_penalty() / len(packed)  # noqa: E731
    history = fine_tune_top_layers(
        ranker,
        packed,
        LABELS,
        loss=head.loss,  # type: ignore[attr-defined]
        penalty=penalty,
        on_epoch_end=seen.append,
        epochs=3,
        lr=1e-3,
        head_lr=1e-2,
        batch_size=4,
        bucket_batches=2,
        seed=seed,
        show_progress=False,
    )
    return ranker, history, seen


@pytest.mark.parametrize("kind", ["deterministic", "gpf"])
def test_fine_tuning_is_seeded_and_learns(
    encoder: HiddenStateEncoder, packed: PackedStates, kind: str
) -> None:
    state = torch.random.get_rng_state()
    ranker, history, seen = _fit(encoder, packed, kind, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert seen == [1, 2, 3] and len(history) == 3
    assert history[-1] < history[0]
    again, history_again, _ = _fit(encoder, packed, kind, seed=0)
    assert history_again == history
    for (name, a), b in zip(ranker.state_dict().items(), again.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
    _, other, _ = _fit(encoder, packed, kind, seed=1)
    assert other != history
    # the top layers moved away from the pretrained copy
    original = encoder.model.encoder.layer[1].attention.self.query.weight
    trained = dense_layers(ranker.top)[0]
    weight = getattr(trained, "parametrizations", None)
    moved = weight.weight.original if weight is not None else trained.weight
    assert not torch.equal(moved.detach(), original)


def test_fine_tuning_rejects_mismatched_labels(
    encoder: HiddenStateEncoder, packed: PackedStates
) -> None:
    ranker = TopLayerRanker(encoder.top_layers(), torch.nn.Linear(32, 1))
    with pytest.raises(InputDataError, match="labels"):
        fine_tune_top_layers(ranker, packed, LABELS[:3], show_progress=False)
