"""One app process for tests/stores/test_two_processes.py: the service, driven over stdin.

Reads one JSON request per line (``{"op": ..., ...}``) and answers one JSON line, so a test can
hold two real processes on one database and act through either. Not a test module.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from core.service import LexplainService


def answer(service: LexplainService, request: dict[str, Any]) -> object:
    op, workspace = request["op"], request.get("workspace", "")
    if op == "create":
        return service.create_workspace(workspace)
    if op == "upload":
        files = [(name, text.encode()) for name, text in request["files"].items()]
        return [r.error for r in service.upload_files(files, workspace=workspace)]
    if op == "search":
        result = service.search(request["query"], workspace=workspace)
        return {"terms": result.terms, "sources": [p.chunk.source_id for p in result.passages]}
    if op == "profile":
        return service.change_profile(workspace, request["profile"])
    if op == "delete":
        return service.delete_workspace(workspace)
    if op == "workspaces":
        return service.list_workspaces()
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    service = LexplainService.from_settings()  # LEXPLAIN_DATABASE_URL, as a deployment sets it
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            reply: dict[str, object] = {"ok": answer(service, json.loads(line))}
        except Exception as exc:  # the test reads the failure; the process keeps serving
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)
    service.close()


if __name__ == "__main__":
    main()
