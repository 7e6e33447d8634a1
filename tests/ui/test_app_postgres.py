"""The same app on PostgreSQL: the sidebar names the server (never the password), the sample
loads through the real store, and Cranfield query 1 ranks exactly as the domain computes.

A fresh schema per module (LEXPLAIN_DATABASE_SCHEMA), dropped afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.test_app import APP, QUERY, Expected, headers, no_exception

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module", autouse=True)
def postgres_service(database_url: str, pg_schema: str) -> Iterator[None]:
    from pages.common import get_service

    patch = pytest.MonkeyPatch()
    patch.delenv("LEXPLAIN_STORE", raising=False)
    patch.setenv("LEXPLAIN_DATABASE_URL", database_url)
    patch.setenv("LEXPLAIN_DATABASE_SCHEMA", pg_schema)
    get_service.clear()  # type: ignore[attr-defined]
    yield
    get_service().close()
    get_service.clear()  # type: ignore[attr-defined]
    patch.undo()


def test_the_app_on_postgresql_ranks_cranfield_like_the_domain(database_url: str) -> None:
    expected = Expected()
    from pages.common import get_service

    get_service().create_workspace("pg-cranfield")  # a link never creates a workspace
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = "pg-cranfield"
    at.run()
    no_exception(at)
    parts = urlsplit(database_url)
    (store,) = [c.value for c in at.sidebar.caption if c.value.startswith("Store:")]
    assert store.startswith(f"Store: PostgreSQL {parts.path.lstrip('/') or 'postgres'}@")
    if parts.password:
        assert parts.password not in store
    at.button(key="load_sample").click().run()
    no_exception(at)
    at.text_input(key="q").input(QUERY).run()
    no_exception(at)
    shown = headers(at)
    assert [h[2] for h in shown] == expected.ranking[:10]
    assert [h[1] for h in shown] == [f"{expected.explanations[h[2]].score:.2f}" for h in shown]
