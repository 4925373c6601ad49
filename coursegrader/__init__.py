"""The book's course tools: its assignments run as an nbgrader course, graded in a sandbox.

nbgrader runs the course (its course directory, exchange, gradebook, formgrader, late-work
plugin, feedback and exporters); this package grades it: each student's cells run in a
bubblewrap sandbox and the tests run outside it, and the results go into nbgrader's gradebook
and autograded notebooks. ``python -m coursegrader --help`` lists the commands;
docs/instructors.md is the guide.

Modules, in the order a submission meets them:

* ``course``: the course directory, its settings, ``nbgrader`` calls, ``generate``;
* ``submissions``: finding a hand-in and reading it safely; files in the wrong place;
* ``spec``: what the source notebook says (tests, points, hints, hand-graded cells);
* ``sandbox`` (host side) and ``runner`` (inside it), ``ownwork`` (the exercise rule);
* ``session`` (the sandbox as the tests see it) and ``grading`` (running the tests);
* ``pairs``: one (student, assignment) pair to a results folder; ``autograded``: its notebook;
* ``result``: a pair's ``Result``; ``run``: a grading run; ``reports``: its reports;
* ``gradebook``: recording results in nbgrader's gradebook, late penalties;
* ``lms``: Canvas and Moodle (export plugins, sorting downloads); ``late``: a per-day penalty;
* ``zh``: the grader's words for the Chinese course;
* ``noautograde``: keeps nbgrader's own autograde off; ``cli``: the commands.

The test kit lives beside what uses it: ``tests/attacks.py`` (the adversarial submissions the
tests grade) and ``bench/legacy.py`` (the old grader the benchmark compares with).
"""
