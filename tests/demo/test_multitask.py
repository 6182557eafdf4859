"""The demo's multi-task section on generated answer lists."""

from __future__ import annotations

from pathlib import Path

from probrank.demo.multitask import demo_section, generated_answer_lists
from probrank.evaluation.calibration import expected_calibration_error
from probrank.models.multitask import MultiTaskNet, fit_multitask, predict_multitask


def test_demo_section_fits_both_heads_and_writes_one_png(tmp_path: Path) -> None:
    markdown, results = demo_section(tmp_path, seed=0, quick=True)
    assert [p.name for p in tmp_path.iterdir()] == ["multitask.png"]
    assert (tmp_path / "multitask.png").stat().st_size > 1000
    assert "multitask.png" in markdown
    assert set(results) == {"deterministic", "bayesian"}
    for row in results.values():
        # the generated utility is linear with noise sd 0.7: both heads learn it
        assert row["accuracy"] > 0.7
        assert 0.0 <= row["ECE"] <= 1.0
    assert results["deterministic"]["mean utility sd"] == 0.0
    assert results["bayesian"]["mean utility sd"] > 0.0


def test_the_section_through_the_model_equals_the_network_driven_directly(tmp_path: Path) -> None:
    # the section builds a MultiTaskRanker; its numbers equal what the demo computed when it
    # drove MultiTaskNet, fit_multitask and predict_multitask itself (ECE, accuracy, sd)
    _, results = demo_section(tmp_path, seed=1, quick=True)
    train, _, _ = generated_answer_lists(40, seed=1)
    val, _, _ = generated_answer_lists(15, seed=2)
    test, _, _ = generated_answer_lists(40, seed=3)
    for name, bayesian in (("deterministic", False), ("bayesian", True)):
        net = MultiTaskNet(train.features.shape[1], hidden=16, bayesian=bayesian, seed=1).double()
        fit_multitask(net, train, val, lr=2e-2, max_epochs=60, patience=15, seed=1)
        p, _, sd = predict_multitask(net, test.features, num_samples=200, seed=1)
        predicted = (p > 0.5).double()
        assert results[name]["accuracy"] == float((predicted == test.labels).double().mean())
        assert results[name]["ECE"] == expected_calibration_error(
            p.numpy(), test.labels.long().numpy(), kind="positive"
        )
        assert results[name]["mean utility sd"] == float(sd.mean())
