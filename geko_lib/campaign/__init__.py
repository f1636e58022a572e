"""One campaign's workdir: what is where, whose it is, whether it can be trusted, how far it got.

- ``layout``: every phase's paths, declared once (``final_results.csv`` is ``FINAL_RESULTS``)
- ``state``: the campaign's identity and ``run_state.json``
- ``start``: what happens when a run starts in a workdir (a workdir of another campaign is
  refused; damaged or stale outputs are removed so they are recomputed)
- ``integrity``: the stamp every output carries and the check every reader makes
- ``provenance``: where a library directory came from, checked before it is reused
- ``lock``: Snakemake's workdir lock, judged by whether its holder still runs
- ``progress``, ``uplift``, ``headline``, ``status``, ``snakemake_records``: where a campaign
  stands (``geko status``) and the numbers it is judged by
- ``coverage``: which GEMMs of a log a library serves (``geko coverage``)
- ``combine``: one library from several campaigns (target ``combine``; the race itself is
  ``Platform.race``)
"""
