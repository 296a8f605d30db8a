"""The ``gymhub`` commands of the trainers part: ``train grpo``, ``serve-reward``, ``openrlhf-agent``.

Registered in pyproject.toml's ``gymhub._cli`` entry-point group; :mod:`gymhub._cli` adds them
when they are run or listed. torch, transformers and fastapi load only inside the commands.
"""

from __future__ import annotations

from pathlib import Path

import typer

from gymhub._cli import out, require_extra, serve_printing_url
from gymhub.errors import GymhubError

train_app = typer.Typer(help="Train a policy on an env.", no_args_is_help=True)


@train_app.command("grpo")
def train_grpo_command(
    config: Path | None = typer.Option(None, help="A YAML file of GRPOConfig fields."),
    env: str | None = typer.Option(None, help="Env id."),
    model: str | None = typer.Option(None, help="A transformers folder or a built-in alias."),
    steps: int | None = typer.Option(None, help="Optimiser steps."),
    group_size: int | None = typer.Option(None, "--group-size", "-g", help="Samples per task (G)."),
    tasks_per_step: int | None = typer.Option(None, help="Tasks (groups) per step."),
    lr: float | None = typer.Option(None, help="Learning rate."),
    output_dir: str | None = typer.Option(None, help="Metrics, checkpoints and the reward curve."),
    resume: bool = typer.Option(False, help="Continue from OUTPUT_DIR/checkpoint."),
    overrides: list[str] = typer.Option([], "--set", help="Any other field: --set kl_coef=0.05"),
) -> None:
    """GRPO on an env (gymhub.trainers.grpo): metrics.jsonl, checkpoint, reward_curve.png."""
    import yaml

    require_extra("train", "torch", "transformers")
    from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer

    given = {
        "env": env,
        "model": model,
        "steps": steps,
        "group_size": group_size,
        "tasks_per_step": tasks_per_step,
        "lr": lr,
        "output_dir": output_dir,
    }
    fields = {k: v for k, v in given.items() if v is not None}
    if resume:
        fields["resume"] = True
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise GymhubError(f"--set takes key=value, not {item!r}")
        fields[key.strip()] = yaml.safe_load(value)
    try:
        cfg = GRPOConfig.from_yaml(config, **fields) if config else GRPOConfig(**fields)
    except TypeError as exc:
        raise GymhubError(f"bad GRPO option: {exc}") from exc
    history = GRPOTrainer(cfg).train()
    last = history[-1] if history else {}
    out.print(
        f"trained {cfg.steps} steps: reward {last.get('reward_mean', float('nan')):.3f}, "
        f"outcome {last.get('outcome_mean', float('nan')):.3f}; see {cfg.output_dir}/"
    )


def serve_reward_command(
    env_id: str = typer.Argument(..., help="The env whose verifier scores the completions."),
    host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
    port: int = typer.Option(5000, help="Port."),
    workers: int = typer.Option(2, min=1, help="Episodes verified at once."),
) -> None:
    """OpenRLHF's remote reward protocol (--remote_rm_url http://HOST:PORT/get_reward)."""
    from gymhub.registry import spec

    require_extra("serve", "fastapi", "uvicorn")
    spec(env_id)
    import uvicorn

    from gymhub._scoring import CompletionScorer
    from gymhub.trainers.openrlhf import create_reward_app

    scorer = CompletionScorer(env_id, workers=workers)
    serve_printing_url(uvicorn, create_reward_app(env_id, scorer=scorer), host, port, f"rewards of {env_id}")


def openrlhf_agent_command(
    env_id: str = typer.Argument(..., help="The env the agent acts in."),
    tokenizer: str = typer.Option(..., help="The policy model's path (its chat template renders env turns)."),
    output: Path = typer.Option(Path("gymhub_agent.py"), "-o", "--output", help="Agent file to write."),
    data: Path | None = typer.Option(None, help="Also write the prompt dataset (JSONL) here."),
    split: str = typer.Option("train", help="Split of the dataset."),
) -> None:
    """Write an OpenRLHF --agent_func_path file (and its prompt dataset) for an env."""
    from gymhub.trainers.openrlhf import agent_file_source, write_dataset

    output.write_text(agent_file_source(env_id, tokenizer))
    out.print(f"wrote {output}")
    if data is not None:
        n = write_dataset(env_id, data, split)
        out.print(f"wrote {data}: {n} prompts (--input_key prompt --label_key label --apply_chat_template)")
