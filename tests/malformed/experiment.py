"""Malformed ``probrank experiment`` configs, and the data files they point at."""

from __future__ import annotations

from collections.abc import Mapping

from tests.malformed.inputs import (
    BILLION_LAUGHS,
    FOLDER,
    GPF,
    MEDIQA_FILES,
    MULTITASK,
    QLF,
    QLF_RUNS,
    RQE_XML,
    UBUNTU_LOG,
    CliCase,
    Content,
    multitask_layout,
    ubuntu_layout,
)

# --- experiment ------------------------------------------------------------------------------


def _experiment(
    name: str,
    toml: Content,
    *expect: str,
    options: tuple[str, ...] = ("--smoke",),
    files: Mapping[str, Content] | None = None,
    env: Mapping[str, str] | None = None,
    process: bool = False,
    xfail: str | None = None,
) -> CliCase:
    layout: dict[str, Content] = dict(files or {})
    if toml is not None:
        layout["c.toml"] = toml
    return CliCase(
        f"experiment-{name}",
        "experiment",
        ("experiment", "{d}/c.toml", *options),
        expect,
        layout,
        env=env or {},
        process=process,
        xfail=xfail,
    )


EXPERIMENT_CASES = [
    _experiment("missing-file", None, "{d}/c.toml", "no such config file", process=True),
    _experiment("folder", FOLDER, "{d}/c.toml", "is a directory"),
    _experiment("invalid-toml", "[experiment\nprotocol = 1\n", "{d}/c.toml:1:", "invalid TOML"),
    _experiment("duplicate-key", QLF + 'path = "again"\n', "{d}/c.toml:6:", "invalid TOML"),
    _experiment(
        "not-utf8", b'[experiment]\nprotocol = "caf\xe9"\n', "{d}/c.toml:2:", "undecodable"
    ),
    _experiment("empty", "", "{d}/c.toml", "empty config file"),
    _experiment("comments-only", "# nothing here\n", "{d}/c.toml", "protocol"),
    _experiment(
        "unknown-protocol",
        '[experiment]\nprotocol = "kfold"\n',
        "{d}/c.toml:2:",
        "experiment.protocol: must be one of",
        process=True,
    ),
    _experiment(
        "no-protocol", "[experiment]\ntitle = 'x'\n", "{d}/c.toml:1:", "experiment.protocol"
    ),
    _experiment("experiment-not-a-table", "experiment = 5\n", "{d}/c.toml:1:", "expected a table"),
    _experiment("unknown-table", QLF + "\n[bogus]\nx = 1\n", "{d}/c.toml:7:", "bogus: unknown key"),
    _experiment(
        "unknown-key-depth-2",
        QLF.replace("[data]", "thread = 2\n\n[data]"),
        "{d}/c.toml:4:",
        "experiment.thread: unknown key",
    ),
    _experiment(
        "unknown-key-depth-3",
        QLF + "\n[smoke.protocol]\nfoldz = 3\n",
        "{d}/c.toml:8:",
        "smoke.protocol.foldz: unknown key",
    ),
    _experiment(
        "unknown-key-in-head-table",
        GPF + "\n[heads.gpf]\nepoch = [1]\n",
        "{d}/c.toml:12:",
        "heads.gpf.epoch: unknown key",
    ),
    _experiment(
        "unknown-key-in-array-of-tables",
        '[experiment]\nprotocol = "interactive"\n\n[[grid]]\nposteriors = ["laplace"]\n\n'
        "[[grid]]\nnoisez = [1.0]\n",
        "{d}/c.toml:8:",
        "grid[1].noisez: unknown key",
    ),
    _experiment(
        "unknown-tune-grid-option",
        '[experiment]\nprotocol = "interactive"\n\n[tune.grid]\n"laplace.bogus" = [1]\n',
        "{d}/c.toml:5:",
        "has no option 'bogus'",
    ),
    _experiment(
        "wrong-type-string",
        QLF.replace("[data]", 'threads = "two"\n\n[data]'),
        "{d}/c.toml:4:",
        "experiment.threads: expected an integer, got 'two'",
    ),
    _experiment(
        "wrong-type-float",
        QLF + "\n[protocol]\nfolds = 2.5\n",
        "{d}/c.toml:8:",
        "protocol.folds: expected an integer",
    ),
    _experiment("out-of-range", QLF + "\n[protocol]\nfolds = 2\n", "{d}/c.toml:8:", "must be >= 3"),
    _experiment(
        "latent-concentration-prior-not-positive",
        QLF + '\n[quantifier]\nlikelihood = "latent_beta_binomial"\n'
        "likelihood_args = {prior_median = -1.0}\n",
        "{d}/c.toml:9:",
        "prior_median must be a positive number, got -1.0",
    ),
    _experiment(
        "latent-concentration-prior-sd-zero",
        QLF + '\n[quantifier]\nlikelihood = "latent_beta_binomial"\n'
        "likelihood_args = {prior_sd = 0.0}\n",
        "{d}/c.toml:9:",
        "prior_sd must be a positive number, got 0.0",
    ),
    _experiment(
        "unknown-likelihood",
        QLF + '\n[quantifier]\nlikelihood = "poisson"\n',
        "{d}/c.toml:8:",
        "quantifier.likelihood: must be one of 'binomial'",
    ),
    _experiment(
        "wrong-type-list",
        '[experiment]\nprotocol = "interactive"\n\n[[grid]]\nnoises = 0.3\n',
        "{d}/c.toml:5:",
        "grid[0].noises",
    ),
    _experiment(
        "zero-noise",
        '[experiment]\nprotocol = "interactive"\n\n[[grid]]\nnoises = [0]\n',
        "{d}/c.toml:5:",
        "must be > 0",
    ),
    _experiment(
        "unknown-posterior",
        '[experiment]\nprotocol = "interactive"\n\n[[grid]]\nposteriors = ["bayes"]\n',
        "{d}/c.toml:5:",
        "must be one of",
    ),
    _experiment(
        "missing-required-key",
        GPF.replace('test = "ubuntu:test"\n', ""),
        "{d}/c.toml:5:",
        "data.test: missing (required)",
    ),
    _experiment("missing-data-table", '[experiment]\nprotocol = "qlfusion_cv"\n', "data: missing"),
    _experiment(
        "bad-split-name",
        GPF.replace("ubuntu:test", "ubuntu"),
        "{d}/c.toml:8:",
        "must be 'dataset:split'",
    ),
    _experiment(
        "seeds-0", QLF, "argument --seeds: must be a positive integer", options=("--seeds", "0")
    ),
    _experiment("seeds-negative", QLF, "argument --seeds", options=("--seeds", "-1")),
    _experiment("threads-0", QLF, "argument --threads", options=("--threads", "0")),
    _experiment(
        "trec-run-nan",
        QLF,
        "{d}/runs/runs/b.run:2:",
        "'nan' is not a number",
        files={**QLF_RUNS, "runs/runs/b.run": "q1 Q0 d1 1 1 b\nq1 Q0 d2 2 nan b\n"},
    ),
    _experiment(
        "trec-qrels-missing",
        QLF,
        "{d}/runs/qrels.txt",
        "no such file",
        files={k: v for k, v in QLF_RUNS.items() if k != "runs/qrels.txt"},
    ),
    _experiment(
        "trec-qrels-nbsp",
        QLF,
        "{d}/runs/qrels.txt:2:",
        "U+00A0",
        files={**QLF_RUNS, "runs/qrels.txt": "q1 0 d1 1\nq1 0 d2\u00a00\n"},
    ),
    _experiment(
        "ubuntu-empty-annotation",
        GPF,
        "{d}/ubuntu/train/2020-01-01.annotation.txt",
        "empty file",
        files=ubuntu_layout("train", links=""),
    ),
    _experiment(
        "ubuntu-bad-annotation-line",
        GPF,
        "{d}/ubuntu/train/2020-01-01.annotation.txt:3:",
        "expected 'parent child -'",
        files=ubuntu_layout("train", links="0 1 -\n1 2 -\nx 3 -\n"),
    ),
    _experiment(
        "ubuntu-superscript-annotation",
        GPF,
        "{d}/ubuntu/train/2020-01-01.annotation.txt:1:",
        "expected 'parent child -'",
        files=ubuntu_layout("train", links="\u00b2 3 -\n"),
    ),
    _experiment(
        "ubuntu-log-not-utf8",
        GPF,
        "{d}/ubuntu/train/2020-01-01.ascii.txt:2:",
        "undecodable byte",
        files=ubuntu_layout("train", log=b"[12:00] <a> hi\n[12:01] <b> caf\xe9\n"),
    ),
    _experiment("ubuntu-split-missing", GPF, "{d}/ubuntu/train", files={"ubuntu": FOLDER}),
    _experiment(
        "ubuntu-test-split-broken",
        GPF,
        "{d}/ubuntu/test/2020-01-01.annotation.txt",
        "annotation file missing",
        files={
            **ubuntu_layout("train"),
            **ubuntu_layout("dev"),
            "ubuntu/test/2020-01-01.ascii.txt": UBUNTU_LOG,
        },
    ),
    _experiment(
        "gpf-mediqa-wrong-root",
        GPF.replace("ubuntu:train", "mediqa:validation") + 'mediqa_dir = "{d}/m"\n',
        "{d}/m/validation.xml",
        "no <Question> elements",
        files={"m/validation.xml": RQE_XML},
    ),
    _experiment(
        "gpf-liveqa-split",
        GPF.replace("ubuntu:train", "liveqa:train"),
        "liveqa has only a test split",
    ),
    _experiment(
        "multitask-medquad-empty",
        MULTITASK,
        "{d}/medquad/1_Src/a.xml",
        "empty file",
        files=multitask_layout(**{"medquad/1_Src/a.xml": ""}),
        process=True,
    ),
    _experiment(
        "multitask-medquad-wrong-root",
        MULTITASK,
        "{d}/medquad/1_Src/a.xml",
        "is not a MedQuAD document's",
        files=multitask_layout(**{"medquad/1_Src/a.xml": RQE_XML}),
    ),
    _experiment(
        "multitask-rqe-bad-value",
        MULTITASK,
        "{d}/rqe/MEDIQA2019-Task2-RQE-TestSet-wLabels.xml",
        "not true/false",
        files=multitask_layout(
            **{
                "rqe/MEDIQA2019-Task2-RQE-TestSet-wLabels.xml": RQE_XML.replace(
                    '"false"', '"maybe"'
                )
            }
        ),
    ),
    _experiment(
        "multitask-rqe-billion-laughs",
        MULTITASK,
        "{d}/rqe/MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml",
        "refused unsafe XML",
        files=multitask_layout(
            **{"rqe/MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml": BILLION_LAUGHS}
        ),
    ),
    _experiment(
        "multitask-key-bad-label",
        MULTITASK,
        "{d}/mediqa/test-ground-truth.csv:3:",
        "label '2' is not 0 or 1",
        files=multitask_layout(
            **{"mediqa/test-ground-truth.csv": "question_id,answer_id,label\n4,4_1,1\n4,4_2,2\n"}
        ),
    ),
    _experiment(
        "multitask-mediqa-superscript-score",
        MULTITASK,
        "{d}/mediqa/train-alexa.xml",
        "integer ReferenceScore",
        files=multitask_layout(
            **{
                "mediqa/train-alexa.xml": MEDIQA_FILES["train-alexa.xml"].replace(
                    'ReferenceScore="1"', 'ReferenceScore="\u00b2"'
                )
            }
        ),
    ),
]
