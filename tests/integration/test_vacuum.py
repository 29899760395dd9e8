"""``privtext vacuum``: a withdrawn publication leaves the table's history; files of a failed write are
removed only once old enough (a write may be in flight)."""
import datetime as dt
import json
import os
import time

import pytest
import yaml

from privtext.cli import main
from privtext.platform.lakehouse import ORPHAN_MIN_HOURS
from privtext.platform.tables import PUBLISHED_SANITIZED_DOCUMENTS as PUBLISHED
from tests_support import write_rows

DAY = dt.date(2026, 1, 15)


def _row(text, date=DAY):
    return {"doc_id": "d1", "sanitized_text": text, "n_spans": 0, "n_replaced": 0, "method": "clusant",
            "params": "{}", "run_id": "r", "date": date}


def test_withdrawn_publication_leaves_history_and_old_orphans_go(ctx, tmp_path, capsys):
    published = write_rows(ctx, PUBLISHED, [_row("withdrawn release")], {"date": [DAY]}).version
    write_rows(ctx, PUBLISHED, [_row("corrected release")], {"date": [DAY]})  # the withdrawal: date replaced
    assert ctx.lakehouse.read(PUBLISHED, version=published).first()["sanitized_text"] == "withdrawn release"
    folder = os.path.join(ctx.lakehouse.table_uri(PUBLISHED), f"date={DAY}")
    fresh, stale = os.path.join(folder, "part-fresh.parquet"), os.path.join(folder, "part-stale.parquet")
    for path in (fresh, stale):  # files of killed writes: never committed
        open(path, "wb").write(b"PAR1")
    old = time.time() - (ORPHAN_MIN_HOURS + 1) * 3600
    os.utime(stale, (old, old))

    conf = tmp_path / "ops.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": ctx.settings.lakehouse.root},
                                    "tracking": {"enabled": False}}))
    assert main(["--conf", str(conf), "vacuum", "--zone", "published"]) == 0  # default retention: 168 h
    assert json.loads(capsys.readouterr().out)["tables"]["published.sanitized_documents"] == {"removed": 0,
                                                                                              "orphans": 0}
    assert main(["--conf", str(conf), "vacuum", "--zone", "published", "--retention-hours", "0", "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["tables"]["published.sanitized_documents"] == {"removed": 1,
                                                                                              "orphans": 1}
    assert os.path.exists(stale)
    assert main(["--conf", str(conf), "vacuum", "--zone", "published", "--retention-hours", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tables"]["published.sanitized_documents"] == {"removed": 1, "orphans": 1}
    assert set(report["tables"]) == {"published.sanitized_documents", "published.synthetic_documents",
                                     "published.word_vectors"}
    assert os.path.exists(fresh) and not os.path.exists(stale)
    assert [r["sanitized_text"] for r in ctx.lakehouse.read(PUBLISHED).collect()] == ["corrected release"]
    with pytest.raises(Exception, match="(?i)not found|no such file|does not exist"):
        ctx.lakehouse.read(PUBLISHED, version=published).collect()  # the withdrawn release is gone from history


def test_the_next_write_removes_old_files_of_killed_writes_only(ctx):
    """Files of a killed write (never committed) older than ORPHAN_MIN_HOURS go with the table's next
    commit; a young one (a write may be in flight) and an old file a commit removed (time travel) stay."""
    first = write_rows(ctx, PUBLISHED, [_row("first release")], {"date": [DAY]})
    write_rows(ctx, PUBLISHED, [_row("second release")], {"date": [DAY]})
    folder = os.path.join(ctx.lakehouse.table_uri(PUBLISHED), f"date={DAY}")
    replaced = os.path.join(ctx.lakehouse.table_uri(PUBLISHED), first.paths[0])
    fresh, stale = os.path.join(folder, "part-fresh.parquet"), os.path.join(folder, "part-stale.parquet")
    for path in (fresh, stale):
        open(path, "wb").write(b"PAR1")
    old = time.time() - (ORPHAN_MIN_HOURS + 1) * 3600
    for path in (stale, replaced):
        os.utime(path, (old, old))
    version = ctx.lakehouse.version(PUBLISHED)
    other = DAY + dt.timedelta(days=1)
    write_rows(ctx, PUBLISHED, [_row("another date", other)], {"date": [other]})
    assert ctx.lakehouse.version(PUBLISHED) == version + 1  # the clean-up commits nothing
    assert not os.path.exists(stale) and os.path.exists(fresh) and os.path.exists(replaced)
    assert ctx.lakehouse.read(PUBLISHED, version=first.version).first()["sanitized_text"] == "first release"
