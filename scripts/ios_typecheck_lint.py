"""The lint of scripts/ios-typecheck: every branch of every `#if` in the checked modules is compiled
somewhere, on Linux by the build or on iOS by the type-check, so no condition hides code from both.
"""
import os
import re


def canimport_sets(sdk, kit):
    ios = set()
    for d in ('System/Library/Frameworks', 'usr/lib/swift'):
        for f in os.listdir(os.path.join(sdk, d)):
            ios.add(f.split('.')[0])
    for f in os.listdir(os.path.join(kit, 'frameworks')):
        ios.add(f.split('.')[0])
    return ios


def evaluate(condition, platform, importable):
    """A compilation condition on iOS or Linux; None where it names something the lint does not know."""
    expr = condition
    for m in re.finditer(r'canImport\((\w+)\)', condition):
        expr = expr.replace(m.group(0), str(m.group(1) in importable[platform]))
    names = {'ios': 'iOS', 'linux': 'Linux', 'macos': 'macOS'}
    for m in re.finditer(r'os\((\w+)\)', condition):
        expr = expr.replace(m.group(0), str(m.group(1) == names[platform]))
    expr = expr.replace('&&', ' and ').replace('||', ' or ').replace('!', ' not ')
    if re.search(r'[A-Za-z_]\w*', re.sub(r'\b(True|False|and|or|not)\b', '', expr)):
        return None
    return eval(expr)  # only True/False/and/or/not and parentheses are left


def lint_conditions(source_dirs, importable, root):
    """Each #if/#elseif/#else branch must be taken on iOS or on Linux. A branch only macOS takes
    (no macOS SDK here) is listed apart: unchecked, and said so in docs/IOS.md."""
    problems, macos_only = [], []
    for d in source_dirs:
        for dirpath, _, files in os.walk(d):
            for f in sorted(files):
                if not f.endswith('.swift'):
                    continue
                path = os.path.join(dirpath, f)
                stack = []  # per #if: [branches so far: (line, condition, taken-on set)]
                for n, line in enumerate(open(path), 1):
                    s = line.strip()
                    m = re.match(r'#(if|elseif)\s+(.*)$', s)
                    if m or s == '#else':
                        if m and m.group(1) == 'if':
                            stack.append([])
                        if not stack:
                            continue
                        condition = m.group(2) if m else None
                        taken = set()
                        for platform in ('ios', 'linux', 'macos'):
                            earlier = any(platform in b[2] for b in stack[-1])
                            value = True if condition is None else evaluate(condition, platform, importable)
                            if value is None:
                                problems.append(f'{os.path.relpath(path, root)}:{n}: the lint does not know `{condition}`')
                                value = False
                            if value and not earlier:
                                taken.add(platform)
                        stack[-1].append((n, condition or 'else', taken))
                    elif s.startswith('#endif') and stack:
                        branches = stack.pop()
                        for n0, condition, taken in branches:
                            if taken == {'macos'}:
                                macos_only.append(f'{os.path.relpath(path, root)}:{n0}: `{condition}`')
                            elif not taken - {'macos'}:
                                problems.append(f'{os.path.relpath(path, root)}:{n0}: the branch `{condition}` is '
                                                'compiled neither on Linux nor by the iOS check')
    return problems, macos_only
