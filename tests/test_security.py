

def test_exports_pass_the_rounds_as_a_query_parameter(tmp_path):
    """Below the command line's own check of --round: the export queries take the rounds as a
    value, so a quote in one cannot widen the selection."""
    from curation.export_source import episode_rows, episodes_with_steps, task_rows

    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=3)
    con = store.duck()
    assert sorted(r["episode_id"] for r in episode_rows(con, ["r0001"])) == sorted(ids)
    for value in INJECTIONS:
        assert list(episode_rows(con, [value])) == []
        assert list(episodes_with_steps(con, [value])) == []
        assert list(task_rows(con, [value])) == []
