"""The report as web pages: ``/runs`` (the store's runs) and ``/runs/{id}`` (the HTML report).

Added to ``gymhub serve`` (read-only) and ``gymhub review`` (with review on: the report's
trajectory viewer then records "verdict right / wrong" and a note through
``POST /runs/{id}/labels``, stored in the store's ``verdict_labels`` table).
"""

from __future__ import annotations

import html
import os
import tempfile
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask

from gymhub.errors import StoreError
from gymhub.report.html_report import write_report
from gymhub.store import VerdictLabel, open_store

REVIEW_URL = "/runs/{run_id}/labels"


class ReviewRequest(BaseModel):
    """A person's review of one trajectory's verdict."""

    trajectory_id: str = Field(min_length=1, max_length=64)
    verdict_right: bool
    note: str = Field("", max_length=10_000)
    reviewer: str = Field("", max_length=200)


def add_report_routes(app: FastAPI, db: str, *, review: bool = False) -> None:
    """Serve the reports of the store at ``db``; ``review``: accept reviews of verdicts."""

    def store() -> Any:
        try:
            return open_store(db, create=False)
        except StoreError as exc:
            raise HTTPException(404, str(exc)) from exc

    @app.get("/runs", response_class=HTMLResponse, responses={404: {"description": "no store"}})
    def runs_page() -> str:
        opened = store()
        try:
            runs, counts = opened.list_runs(), opened.run_counts()
        finally:
            opened.close()
        rows = "".join(
            f'<tr><td><a href="/runs/{html.escape(r.id)}">{html.escape(r.id)}</a></td>'
            f"<td>{html.escape(r.env_id)}</td><td>{html.escape(r.policy)}</td><td>{html.escape(r.split)}</td>"
            f"<td>{len(r.task_ids)} × {r.group_size}</td><td>{counts.get(r.id, (0, 0))[0]}</td>"
            f"<td>{counts.get(r.id, (0, 0))[1]}</td></tr>"
            for r in runs
        )
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>gymhub runs</title>'
            '<link rel="icon" href="data:,">'  # no favicon request
            "<style>body{font:14px system-ui,sans-serif;margin:24px}table{border-collapse:collapse}"
            "td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}</style></head><body>"
            f"<h1>Runs</h1><table id='runs'><tr><th>run</th><th>env</th><th>policy</th><th>split</th>"
            f"<th>tasks × G</th><th>trajectories</th><th>errored</th></tr>{rows}</table></body></html>"
        )

    @app.get("/runs/{run_id}", response_class=HTMLResponse, responses={404: {"description": "no such run"}})
    def run_page(run_id: str) -> FileResponse:
        opened = store()
        handle, path = tempfile.mkstemp(suffix=".html", prefix="gymhub-report-")
        os.close(handle)
        try:
            write_report(opened, [run_id], path, review_url=REVIEW_URL if review else None)
        except StoreError as exc:
            os.unlink(path)
            raise HTTPException(404, str(exc)) from exc
        except BaseException:
            os.unlink(path)
            raise
        finally:
            opened.close()
        return FileResponse(
            path, media_type="text/html; charset=utf-8", background=BackgroundTask(os.unlink, path)
        )

    if not review:
        return

    @app.post(REVIEW_URL, responses={404: {"description": "no such run or trajectory"}})
    def record_review(run_id: str, body: ReviewRequest) -> VerdictLabel:
        opened = store()
        try:
            return opened.set_label(
                run_id,
                body.trajectory_id,
                verdict_right=body.verdict_right,
                note=body.note,
                reviewer=body.reviewer,
            )
        except StoreError as exc:
            raise HTTPException(404, str(exc)) from exc
        finally:
            opened.close()
