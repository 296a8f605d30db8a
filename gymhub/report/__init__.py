"""Reports of stored runs: pass@k, the self-contained HTML report, human review of verdicts.

``gymhub eval`` (:mod:`gymhub.report.evaluation`), ``gymhub report``
(:mod:`gymhub.report.html_report`), ``gymhub review`` and the ``/runs`` pages of ``gymhub serve``
(:mod:`gymhub.report.pages`). Nothing here is imported by ``import gymhub``.
"""
