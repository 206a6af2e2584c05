"""Secrets never leave: a full round, review and export with recognisable secrets set (the model
API key, the Label Studio token, the judge's key, the state database's password, a reviewer's
password); every output is searched for them: stdout and stderr of each command (--json too),
every file of the data directory and the exports, every row of the state database, and what the
Prefect server holds (flow and task runs with their parameters, logs, deployments: the Prefect UI)."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import psycopg

from tests.conftest import cli_env, flywheel_executable, free_port
from warehouse.store import Store

SECRETS = {
    "api key": "sk-flywheelSECRETapikey0001",
    "label studio token": "flywheelSECRETlstoken0002",
    "judge key": "flywheelSECRETjudgekey0003",
    "database password": "flywheelSECRETpgpass0004",
    "reviewer password": "flywheelSECRETreviewpw0005",
}


def _fw(*args: str, env: dict[str, str], cwd: Path, input_text: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([flywheel_executable(), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          input=input_text, timeout=600)


def _leaks(text: str) -> list[str]:
    return [what for what, secret in SECRETS.items() if secret in text]


def _prefect_records(api: str) -> str:
    """Everything the Prefect UI shows of runs: flow runs (with parameters), task runs, logs, deployments."""
    out = []
    for path in ("flow_runs/filter", "task_runs/filter", "logs/filter", "deployments/filter"):
        req = urllib.request.Request(f"{api}/{path}", data=b'{"limit": 200}', method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            out.append(resp.read().decode())
    return "\n".join(out)


def _database_rows(admin_url: str) -> str:
    out = []
    with psycopg.connect(admin_url) as con:
        tables = [t for (t,) in con.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        for t in tables:
            out += [repr(r) for r in con.execute(f'SELECT * FROM "{t}"')]
    return "\n".join(out)


def test_no_secret_in_any_output_of_a_round_a_review_and_an_export(tmp_path, prefect_server, fresh_postgres_url):
    pg_with_password = fresh_postgres_url.replace("postgres@", f"postgres:{SECRETS['database password']}@", 1)
    assert SECRETS["database password"] in pg_with_password  # trust auth: the password is accepted and unused
    env = cli_env(
        prefect_server,
        FLYWHEEL_STATE_URL=pg_with_password,
        FLYWHEEL_OPENAI__API_KEY=SECRETS["api key"],
        FLYWHEEL_LABEL_STUDIO__URL=f"http://127.0.0.1:{free_port()}",  # down: its errors are outputs too
        FLYWHEEL_LABEL_STUDIO__TOKEN=SECRETS["label studio token"],
        FLYWHEEL_CURATION__JUDGE_API_KEY=SECRETS["judge key"],
    )
    data, out = tmp_path / "flywheel-data", tmp_path / "exports"
    pw = SECRETS["reviewer password"]
    runs = {"run": _fw("run", "--episodes", "16", "--rollouts", "2", "--json", "--no-progress", env=env, cwd=tmp_path)}
    assert runs["run"].returncode == 0, runs["run"].stderr
    summary = json.loads(runs["run"].stdout)
    assert "error" in summary["label_studio"]  # the sync failed, and said so
    runs["reviewer add"] = _fw("reviewer", "add", "lea", "--role", "lead", "--password-stdin", env=env, cwd=tmp_path,
                               input_text=pw + "\n")
    store = Store(data, fresh_postgres_url)
    eid = store.duck().execute("SELECT episode_id FROM episodes ORDER BY 1 LIMIT 1").fetchone()[0]
    runs["decide"] = _fw("decide", eid, "--reviewer", "lea", "--decision", "approve", "--password-stdin", env=env,
                         cwd=tmp_path, input_text=pw + "\n")
    runs["decide, wrong password"] = _fw("decide", eid, "--reviewer", "lea", "--decision", "approve",
                                         "--password-stdin", env=env, cwd=tmp_path, input_text=pw + "x\n")
    runs["export"] = _fw("export", "--verified", "--out", str(out / "openai"), env=env, cwd=tmp_path)
    runs["export rl"] = _fw("export", "--format", "rl", "--verified", "--out", str(out / "rl"), env=env, cwd=tmp_path)
    runs["status"] = _fw("status", env=env, cwd=tmp_path)
    runs["status --json"] = _fw("status", "--json", env=env, cwd=tmp_path)
    runs["plan --json"] = _fw("plan", "--json", env=env, cwd=tmp_path)
    runs["label-studio pull"] = _fw("label-studio", "pull", env=env, cwd=tmp_path)
    bad_port = pg_with_password.replace(":5432/", ":1/")
    runs["status, database down"] = _fw("status", "--state-url", bad_port, env=env, cwd=tmp_path)
    runs["status, URL that does not parse"] = _fw("status", "--state-url", pg_with_password.replace(":5432/", ":port/"),
                                                  env=env, cwd=tmp_path)
    for name in ("reviewer add", "decide", "export", "export rl", "status", "status --json", "plan --json"):
        assert runs[name].returncode == 0, f"{name}: {runs[name].stderr}"
    for name in ("decide, wrong password", "label-studio pull", "status, database down",
                 "status, URL that does not parse"):
        assert runs[name].returncode != 0 and runs[name].stderr.startswith("error: "), f"{name}: {runs[name].stderr}"

    leaks = {name: _leaks(p.stdout + p.stderr) for name, p in runs.items()}
    assert not any(leaks.values()), leaks
    files = [p for p in [*data.rglob("*"), *out.rglob("*")] if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files) and any(p.name.endswith(".manifest.json") for p in files)
    leaked_files = {str(p): _leaks(p.read_bytes().decode("latin-1")) for p in files}
    assert not any(leaked_files.values()), {k: v for k, v in leaked_files.items() if v}
    assert not _leaks(_database_rows(fresh_postgres_url.replace("+psycopg", "")))
    prefect = _prefect_records(prefect_server)
    # the round's flow run is there to search, with its settings as parameters, the password hidden
    assert '"state_url":"postgresql+psycopg://postgres:***@' in prefect.replace(" ", ""), prefect[:2000]
    assert not _leaks(prefect), _leaks(prefect)
