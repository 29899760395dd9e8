import pytest

from privtext.settings import ConfigError, load_settings


def test_defaults_and_environment_file_merge():
    settings = load_settings("conf/local.yaml", environ={})
    assert settings.spark.master == "local[2]"  # local.yaml overrides base.yaml's local[*]
    assert settings.spark.conf["spark.sql.shuffle.partitions"] == "4"
    assert settings.lakehouse.zone_root("published").endswith("/lakehouse/published")


def test_environment_variables_override_files():
    settings = load_settings("conf/local.yaml", environ={"PRIVTEXT_SPARK__MASTER": "spark://h:7077",
                                                        "PRIVTEXT_RUN__DETERMINISTIC": "true"})
    assert settings.spark.master == "spark://h:7077"
    assert settings.run.deterministic is True


def test_unknown_key_names_the_dotted_path_and_allowed_keys():
    with pytest.raises(ConfigError) as error:
        load_settings(None, overrides={"lakehouse": {"roott": "x"}}, environ={})
    message = str(error.value)
    assert "'lakehouse.roott'" in message
    assert "root" in message and "zone_roots" in message


def test_bad_value_names_the_key_and_what_is_allowed():
    with pytest.raises(ConfigError) as error:
        load_settings(None, overrides={"lakehouse": {"zone_roots": {"secret": "/x"}}}, environ={})
    assert "lakehouse.zone_roots.secret" in str(error.value)
    with pytest.raises(ConfigError) as error:
        load_settings(None, environ={"PRIVTEXT_INGEST__MAX_CHARS": "-5"})
    assert "ingest.max_chars" in str(error.value) and "greater than 0" in str(error.value)


def test_cluster_example_is_valid():
    settings = load_settings("conf/cluster.example.yaml", environ={})
    assert settings.lakehouse.zone_root("published") == "s3://privtext-published/lake"
    assert settings.lakehouse.zone_root("restricted") != settings.lakehouse.zone_root("published")
    assert settings.lakehouse.lock_dir.startswith("/")  # an s3:// root needs a mounted folder for the stage leases


def test_a_dataset_without_a_budget_or_with_an_incomplete_or_infinite_one_fails_at_start():
    with pytest.raises(ConfigError, match=r"dataset 'tickets' has no privacy budget: add privacy.budgets.tickets"):
        load_settings(None, environ={}, overrides={"run": {"dataset": "tickets"}})
    with pytest.raises(ConfigError, match=r"'privacy.budgets.tickets.delta_max': Field required"):
        load_settings(None, environ={}, overrides={"privacy": {"budgets": {"tickets": {"eps_max": 1.0}}}})
    for limit in ("null", ".inf", "1e309"):
        with pytest.raises(ConfigError,
                           match=r"'privacy.budgets.default.eps_max': Input should be a (valid|finite) number"):
            load_settings(None, environ={"PRIVTEXT_PRIVACY__BUDGETS__DEFAULT__EPS_MAX": limit})
