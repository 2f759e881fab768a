"""A rendered report page read back as a reader would meet it: for the tests, and for a report someone is about to send.

    facts.py       what the page promises, read from its HTML (size, figures per study, widest table, ids, links)
                   and, per width, the cells a reader must see whole: ``python -m normbench.page_check.facts``
    screenshot.py  headless Chromium at a desktop and a phone width: the first screen, and what does not load or
                   sticks out: ``python -m normbench.page_check.screenshot``

Not the report: it reads the report's output, never its code's data. This package may import the report's
page limits (``normbench.report``) and nothing that trains; nothing imports it but the tests.
"""
