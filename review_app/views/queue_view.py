"""The queue: filters in the sidebar, one page of episodes, click to open."""

from __future__ import annotations

import streamlit as st

from review_app import bulk, keys, queue
from review_app.plain_text import md, md_line
from review_app.views import Ctx
from warehouse import state

PAGE_SIZE = 25
_SUCCESS = {"any": None, "failures": False, "successes": True}


def round_ids(ctx: Ctx) -> list[str]:
    with ctx.store.session() as s:
        return [r.id for r in reversed(state.list_rounds(session=s))]


def current_filter(ctx: Ctx) -> queue.QueueFilter:
    """The filter the sidebar widgets describe (also used by 'next episode')."""
    ss = st.session_state
    rnd = ss.get("f_round", "all")
    return queue.QueueFilter(
        round_ids=[] if rnd in (None, "all") else [rnd],
        families=list(ss.get("f_family", [])),
        capabilities=list(ss.get("f_capability", [])),
        success=_SUCCESS[ss.get("f_success", "any")],
        marks=list(ss.get("f_marks", [])),
        status=ss.get("f_status", "to review"),
        text=ss.get("f_text") or "",
    )


def sidebar_filters(ctx: Ctx) -> None:
    rounds = round_ids(ctx)
    sb = st.sidebar
    # Each label is written as plain text above its widget: the widgets' own labels arrive with
    # their lazily loaded scripts, which left unlabelled grey boxes on a first, slow load.
    _label(sb, "Round")
    sb.selectbox("Round", ["all", *rounds], index=1 if rounds else 0, key="f_round", label_visibility="collapsed")
    _label(sb, "Search")
    sb.text_input("Search", key="f_text", label_visibility="collapsed", placeholder="instruction or tool call text")
    rnd = st.session_state.get("f_round")
    opts = queue.filter_options(ctx.store, None if rnd == "all" else [rnd])
    for label, widget, options, key in [
        ("Family", sb.multiselect, opts["families"], "f_family"),
        ("Capability", sb.multiselect, opts["capabilities"], "f_capability"),
        ("Outcome", sb.selectbox, list(_SUCCESS), "f_success"),
        ("Marks", sb.multiselect, opts["marks"], "f_marks"),
        ("Reviewer status", sb.selectbox, list(queue.STATUS_FILTERS), "f_status"),
    ]:
        _label(sb, label)
        widget(label, options, key=key, label_visibility="collapsed")


def _label(container, text: str) -> None:
    container.markdown(f'<p style="font-size:14px;line-height:1.6;margin:0 0 -0.3rem 0">{text}</p>', unsafe_allow_html=True)


def render(ctx: Ctx, open_episode) -> None:
    sidebar_filters(ctx)
    flt = current_filter(ctx)
    ss = st.session_state
    if note := ss.pop("flash_note", None):
        st.info(md(note))

    def read(number: int) -> queue.QueuePage:
        return queue.queue_page(ctx.store, ctx.user, flt, limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE,
                                overlap=ctx.overlap)

    page_no = max(1, int(ss.get("q_page") or 1))
    page = read(page_no)
    pages = max(1, (page.total + PAGE_SIZE - 1) // PAGE_SIZE)
    if page_no > pages:  # the filters changed under a later page: show their last page, and say so in the box
        page_no = ss["q_page"] = pages
        page = read(page_no)
    st.subheader(f"Queue · {page.total} episodes")
    top = st.columns([1, 1, 4])
    if top[0].button("Start reviewing (n)", key="kb_next", type="primary", disabled=page.total == 0):
        open_episode(page.rows[0]["episode_id"], page.rows[0]["round_id"])
    top[1].number_input("Page", min_value=1, max_value=pages, key="q_page", label_visibility="collapsed")
    top[2].caption(f"page {page_no} of {pages} · routed to people first, then failures, then the sample")
    st.html(keys.script_tag({"n": "kb_next"}), unsafe_allow_javascript=True)
    if note := ss.pop("bulk_flash", None):
        st.success(md(note))
    if ctx.user.is_lead:
        _bulk_approve(ctx, flt)
    if not page.rows:
        st.info("Nothing to review under these filters.")
        return
    for row in page.rows:
        c = st.columns([0.9, 5, 1.2, 1.6])
        if c[0].button("Open", key=f"open-{row['episode_id']}", help="Open this episode"):
            open_episode(row["episode_id"], row["round_id"])
        tag = ":violet[routed]" if row["routed"] else (":red[failed]" if not row["success"] else ":green[verified]")
        if row["reference"]:  # the reference solution, not the model: say so before anything else
            tag = ":blue[reference demonstration] · " + tag
        held = " · :gray[challenge: held out]" if row["split"] == "challenge" else ""  # never trained on
        c[1].markdown(f"{tag} · **{md_line(row['family'], 80)}**{held} · {md_line(row['instruction'], 140)}")
        c[2].caption(f"{row['steps']} steps · progress {row['progress']:.2f}")
        who = md(", ".join(row["reviewers"])) or "nobody yet"
        marks = md_line(", ".join(row["marks"]), 200)
        c[3].caption(f"{md(row['status'])} ({who})" + (f" · {marks}" if marks else ""))


def _bulk_approve(ctx: Ctx, flt: queue.QueueFilter) -> None:
    """A lead approves every verified success the filters select, after a spot check."""
    ss = st.session_state
    with st.expander("Bulk approve (lead)"):
        todo = bulk.candidates(ctx.store, ctx.user, flt, ctx.overlap)
        fams = sorted({r["family"] for r in todo})
        st.caption(md(f"{len(todo)} verified successes under these filters that you have not decided"
                      + (f" (families: {', '.join(fams[:10])}{' …' if len(fams) > 10 else ''})" if fams else "")
                      + "; reference demonstrations are left out. Each is recorded as your approval, with your "
                      "note saying it was bulk."))
        note = st.text_input("What you checked", key="bulk_note", placeholder="e.g. spot-checked 10 of them: all good")
        # a new box after each bulk approve: the next one needs its own tick
        checked = st.checkbox("I spot-checked these episodes", key=f"bulk_checked_{ss.get('bulk_runs', 0)}")
        if st.button(f"Approve {len(todo)} episodes", key="bulk_go", type="primary",
                     disabled=not (todo and checked and note.strip())):
            done = st.progress(0.0)
            count = [0]

            def tick() -> None:
                count[0] += 1
                done.progress(count[0] / len(todo))

            result = bulk.approve_all(ctx.store, lead=ctx.user.name, episodes=todo, note=note, on_each=tick)
            ss["bulk_flash"] = (f"Bulk approved {result.recorded} episodes as {ctx.user.name}"
                                + (f" ({result.already} already approved)" if result.already else "")
                                + (f"; refused {len(result.refused)}: {result.refused[0][0]}: {result.refused[0][1]}"
                                   if result.refused else ""))
            ss["bulk_runs"] = ss.get("bulk_runs", 0) + 1
            st.rerun()
