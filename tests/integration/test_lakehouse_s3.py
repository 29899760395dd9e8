"""The lakehouse's driver-side path on a real S3 store (SeaweedFS): delta-rs commits with conditional put,
files through pyarrow.fs. Two writers committing from the same snapshot must not overwrite each other's
``_delta_log`` entry (what ``aws_conditional_put: etag`` buys over unsafe rename)."""
import pyarrow as pa
import pytest
from deltalake.exceptions import CommitFailedError
from pyarrow.fs import FileSelector

from privtext.platform.lakehouse import Lakehouse, TableSpec
from privtext.platform.storage import filesystem
from tests_support import make_budget_settings

SPEC = TableSpec("protected", "charges", pa.schema([("id", pa.string()), ("eps", pa.float64())]))


@pytest.fixture
def lake(tmp_path, s3_store, monkeypatch):
    for name, value in s3_store.env("pipeline").items():  # the pipeline's key, only in the environment
        monkeypatch.setenv(name, value)
    settings = make_budget_settings(tmp_path / "lake")
    from privtext.platform.config import ObjectStoreSettings

    lakehouse = settings.lakehouse.model_copy(update={"zone_roots": s3_store.zone_roots(),
                                                      "object_store": ObjectStoreSettings(**s3_store.object_store())})
    lake = Lakehouse(None, lakehouse)
    assert lake.create(SPEC) is True and lake.table_uri(SPEC).startswith("s3://privtext-protected/")
    return lake


def test_appends_from_one_snapshot_both_land_as_separate_versions(lake):
    first, second = lake.delta_table(SPEC), lake.delta_table(SPEC)
    assert lake.append_rows(SPEC, [{"id": "a", "eps": 1.0}], snapshot=first).version == 1
    assert lake.append_rows(SPEC, [{"id": "b", "eps": 2.0}], snapshot=second).version == 2  # 1.json was not overwritten
    assert sorted(lake.read_rows(SPEC).column("id").to_pylist()) == ["a", "b"]
    assert [h["version"] for h in lake.delta_table(SPEC).history()] == [2, 1, 0]


def test_guarded_commits_from_one_snapshot_conflict_and_the_loser_leaves_no_file(lake):
    first, second = lake.delta_table(SPEC), lake.delta_table(SPEC)
    lake.append_rows(SPEC, [{"id": "a", "eps": 1.0}], guard="ledger", snapshot=first)
    with pytest.raises(CommitFailedError):
        lake.append_rows(SPEC, [{"id": "b", "eps": 2.0}], guard="ledger", snapshot=second)
    assert lake.read_rows(SPEC).column("id").to_pylist() == ["a"]
    assert len(lake.delta_table(SPEC).file_uris()) == 1
    fs, root = filesystem(lake.table_uri(SPEC), lake.settings.zone_store("protected"))
    stored = [i.path for i in fs.get_file_info(FileSelector(root, recursive=True)) if i.path.endswith(".parquet")]
    # loser's deleted
    assert stored == [f"{root}/{pa.table(lake.delta_table(SPEC).get_add_actions()).column('path')[0]}"]
