"""The grader's words for students of the Chinese course (``make assignments LANG=zh``).

The notes, verdict lines and feedback the grader writes are built in English from a few fixed
phrases; ``say(text, lang)`` puts those phrases into Chinese for a course whose statements are
Chinese (``Spec.lang``), leaving the parts that are code or data as they are: names of calls and
cells, error types and messages, and hints, which are comments in the tests' code and so are
shared by both courses (book/i18n.py translates markdown, not code).
"""
from __future__ import annotations

import re

PHRASES = [  # (English pattern, Chinese), applied in order
    (r"not answered \(raise NotImplementedError is still there\)",
     "未作答（raise NotImplementedError 仍在原处）"),
    (r" \(hint: (.*?)\)(?=; |$)", r"（提示：\1）"),
    (r"hidden tests failed: ", "隐藏测试未通过："),
    (r"self-check failed: ", "自检未通过："),
    (r"your solution cell failed: ", "你的解答单元格出错："),
    (r"your function raised ", "你的函数抛出了 "),
    (r"your function ", "你的函数 "),
    (r"stopped after the (\S+) s time limit per cell", r"超过每个单元格 \1 秒的时间限制，已被终止"),
    (r"; the points already earned were kept", "；已得的分数保留"),
    (r"(ex\d+) uses (.+?)( \(.*?\))?, which this exercise asks you to write yourself",
     r"\1 使用了 \2\3，而这道练习要求你自己实现它"),
    (r"(ex\d+) uses (.+?)( \(.*?\))?, which could get round the check of the calls it rules out",
     r"\1 使用了 \2\3，这可能绕过对禁用调用的检查"),
    (r"test cell (\S+) appears (\d+) times; the original ran once",
     r"测试单元格 \1 出现了 \2 次；原始测试只运行了一次"),
    (r"test cell (\S+) was missing; the original ran", r"测试单元格 \1 缺失；已运行原始测试"),
    (r"ignored \(only the notebook (.+?) is graded\): ", r"已忽略（只评分笔记本 \1）："),
    (r"^graded (.+?) as (.+)$", r"已把 \1 当作 \2 评分"),
    (r"^nothing handed in$", "未提交"),
    (r" \(memory limit\)", "（内存限制）"),
    (r"^every test passed$", "全部测试通过"),
    (r"every self-check passed and every hidden test failed: an answer fitted to the self-checks "
     r"\(hard-coded\)\?", "所有自检都通过而所有隐藏测试都失败：答案是否专为迎合自检而写（硬编码）？"),
]
COMPILED = [(re.compile(p), zh) for p, zh in PHRASES]


def say(text: str | None, lang: str = "en") -> str | None:
    """``text`` in the course's language (``"zh"``: the fixed phrases in Chinese)."""
    if lang != "zh" or not text:
        return text
    for pattern, zh in COMPILED:
        text = pattern.sub(zh, text)
    return text


def verdict(earned: float, points: float, why: str | None, lang: str = "en") -> str:
    """The line under a test cell in the autograded notebook (and the feedback)."""
    if why is None and earned >= points:
        return (f"通过：{earned:g} / {points:g} 分\n" if lang == "zh"
                else f"passed: {earned:g} of {points:g} points\n")
    if lang == "zh":
        return f"{earned:g} / {points:g} 分：{say(why, lang) or '未评分'}\n"
    return f"{earned:g} of {points:g} points: {why or 'not graded'}\n"
