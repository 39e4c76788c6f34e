/* Call-based problems ({"in_outs": {..., "fn_name"}}): a harness calls the submission's function with
 * one test's arguments (a JSON list on stdin) and writes the JSON of the result, alone, to the
 * stdout it kept; the submission's own prints go to stderr, so they cannot be mistaken for the
 * result, and the answer is compared as a JSON value. A submission that exits before returning
 * leaves no result: wrong.
 *
 *   python  a harness file beside main.py: fn_name at the top level, else a method of Solution();
 *           it holds its own json.dumps and os.write from before the submission is imported
 *   node    a harness file beside main.js: fn_name at the top level (or exported), else a method of
 *           new Solution(); it holds JSON.stringify, fs.writeSync and process.exit likewise
 *   cpp     the harness is compiled with the submission (appended to it, compiled once): fn_name
 *           a free function, or a member of class Solution when the source defines one; parameter
 *           types (integers, floating point, bool, char, std::string, std::vector of those, nested)
 *           are read from the function's signature, so the JSON arguments convert to them
 *
 * The harness's own failures (no such function, a result JSON cannot hold, arguments of the wrong
 * arity) are a line of stderr starting PD_JHARNESS_SAYS and exit status 3: the judge keeps that
 * line as the test's "harness" message, apart from the program's stderr.
 *
 * C (no way to know a function's parameter types or an array's length from its signature) and bash
 * have none: a call-based problem refuses them. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char harness_py[] =
	"import json, os, sys\n"
	"_dumps, _write, _exit = json.dumps, os.write, os._exit\n"
	"def _say(msg):\n"
	"    for f in (sys.stdout, sys.stderr):\n"
	"        try: f.flush()\n"
	"        except Exception: pass\n"
	"    _write(2, ('\\n" PD_JHARNESS_SAYS "' + msg + '\\n').encode())\n"
	"    _exit(3)\n"
	"_out = os.dup(1)\n"
	"os.dup2(2, 1)\n"
	"_args = json.loads(sys.stdin.read())\n"
	"import importlib.util\n"
	"_spec = importlib.util.spec_from_file_location('solution', '/work/main.py')\n"
	"_mod = importlib.util.module_from_spec(_spec)\n"
	"sys.modules['solution'] = _mod\n"
	"_spec.loader.exec_module(_mod)\n"
	"_name = sys.argv[1]\n"
	"_fn = getattr(_mod, _name, None)\n"
	"if _fn is None and isinstance(getattr(_mod, 'Solution', None), type):\n"
	"    _fn = getattr(_mod.Solution(), _name, None)\n"
	"if not callable(_fn):\n"
	"    _say('the submission defines no function %s (nor a method of class Solution)' % _name)\n"
	"_res = _fn(*_args)\n"
	"try:\n"
	"    _txt = _dumps(_res)\n"
	"except (TypeError, ValueError) as _e:\n"
	"    _say('the function returned a value JSON cannot hold: %s' % _e)\n"
	"_write(_out, (_txt + '\\n').encode())\n";

/* The submission is evaluated as a function body, so that its top-level function declarations are
 * reachable by name (a CommonJS module keeps them private); module.exports works too. */
static const char harness_js[] =
	"'use strict';\n"
	"const fs = require('fs'), util = require('util');\n"
	"const writeSync = fs.writeSync, stringify = JSON.stringify, exit = process.exit.bind(process);\n"
	"const name = process.argv[2];\n"
	"const args = JSON.parse(fs.readFileSync(0, 'utf8'));\n"
	"const err = process.stderr.write.bind(process.stderr);\n"
	"process.stdout.write = err;\n"
	"console.log = console.info = console.debug = (...a) => err(util.format(...a) + '\\n');\n"
	"const src = fs.readFileSync('/work/main.js', 'utf8');\n"
	"const mod = {exports: {}};\n"
	"const found = new Function('require', 'module', 'exports', src +\n"
	"  '\\n;return [typeof ' + name + \" === 'function' ? \" + name + ' : undefined, ' +\n"
	"  \"typeof Solution === 'function' ? Solution : undefined];\")(require, mod, mod.exports);\n"
	"let fn = found[0] || (typeof mod.exports[name] === 'function' ? mod.exports[name] : undefined);\n"
	"const say = (m) => { writeSync(2, '\\n" PD_JHARNESS_SAYS "' + m + '\\n'); exit(3); };\n"
	"const method = (C) => { const s = new C(); return typeof s[name] === 'function' ? s[name].bind(s) : undefined; };\n"
	"if (!fn && found[1]) fn = method(found[1]);\n"
	"if (!fn && typeof mod.exports.Solution === 'function') fn = method(mod.exports.Solution);\n"
	"if (typeof fn !== 'function') say('the submission defines no function ' + name + ' (nor a method of class Solution)');\n"
	"const res = fn(...args);\n"
	"writeSync(1, stringify(res === undefined ? null : res) + '\\n');\n"
	"exit(0);\n";

/* Appended to a C++ submission. Its JSON reader and writer live in their own namespace and name
 * std:: in full, so a submission's `using namespace std` changes nothing here. */
static const char harness_cpp[] =
	"\n#include <cmath>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <iostream>\n"
	"#include <iterator>\n#include <string>\n#include <tuple>\n#include <type_traits>\n#include <utility>\n"
	"#include <vector>\n#include <unistd.h>\n"
	"namespace paddock_harness {\n"
	"struct J { int k = 0; bool b = false; bool isint = false; long long i = 0; double n = 0; std::string s;\n"
	"  std::vector<J> a; }; /* k: 0 null, 1 bool, 2 number, 3 string, 4 list, 5 object (its values) */\n"
	"static void utf8(std::string &o, unsigned u) {\n"
	"  if (u < 0x80) o += (char)u;\n"
	"  else if (u < 0x800) { o += (char)(0xC0 | (u >> 6)); o += (char)(0x80 | (u & 63)); }\n"
	"  else { o += (char)(0xE0 | (u >> 12)); o += (char)(0x80 | ((u >> 6) & 63)); o += (char)(0x80 | (u & 63)); } }\n"
	"struct P { const char *p; bool bad = false;\n"
	"  void ws() { while (*p == ' ' || *p == '\\n' || *p == '\\t' || *p == '\\r') p++; }\n"
	"  std::string str() { std::string s; p++;\n"
	"    while (*p && *p != '\"') {\n"
	"      if (*p != '\\\\') { s += *p++; continue; }\n"
	"      p++; char x = *p ? *p++ : 0;\n"
	"      if (x == 'n') s += '\\n'; else if (x == 't') s += '\\t'; else if (x == 'r') s += '\\r';\n"
	"      else if (x == 'b') s += '\\b'; else if (x == 'f') s += '\\f';\n"
	"      else if (x == 'u') { char h[5] = {0}; for (int k = 0; k < 4 && *p; k++) h[k] = *p++;\n"
	"        utf8(s, (unsigned)std::strtoul(h, nullptr, 16)); }\n"
	"      else s += x; }\n"
	"    if (*p) p++; else bad = true;\n"
	"    return s; }\n"
	"  J val() { ws(); J j;\n"
	"    if (*p == '[' || *p == '{') { char close = *p == '[' ? ']' : '}'; j.k = *p == '[' ? 4 : 5; p++; ws();\n"
	"      if (*p == close) { p++; return j; }\n"
	"      for (;;) { if (j.k == 5) { ws(); if (*p != '\"') { bad = true; return j; } str(); ws();\n"
	"          if (*p++ != ':') { bad = true; return j; } }\n"
	"        j.a.push_back(val()); ws();\n"
	"        if (*p == ',') { p++; continue; }\n"
	"        if (*p == close) { p++; return j; }\n"
	"        bad = true; return j; } }\n"
	"    if (*p == '\"') { j.k = 3; j.s = str(); return j; }\n"
	"    if (!std::strncmp(p, \"true\", 4)) { j.k = 1; j.b = true; p += 4; return j; }\n"
	"    if (!std::strncmp(p, \"false\", 5)) { j.k = 1; p += 5; return j; }\n"
	"    if (!std::strncmp(p, \"null\", 4)) { p += 4; return j; }\n"
	"    char *end; const char *st = p; j.n = std::strtod(p, &end);\n"
	"    if (end == p) { bad = true; return j; }\n"
	"    j.k = 2; j.isint = true;\n"
	"    for (const char *q = st; q < end; q++) if (*q == '.' || *q == 'e' || *q == 'E') j.isint = false;\n"
	"    if (j.isint) j.i = std::strtoll(st, nullptr, 10);\n"
	"    p = end; return j; } };\n"
	"template <class T> struct is_vec : std::false_type {};\n"
	"template <class T, class A> struct is_vec<std::vector<T, A>> : std::true_type {};\n"
	"template <class T> struct is_pair : std::false_type {};\n"
	"template <class A, class B> struct is_pair<std::pair<A, B>> : std::true_type {};\n"
	"template <class T> struct no : std::false_type {};\n"
	"template <class T> T get(const J &j) {\n"
	"  if constexpr (std::is_same_v<T, bool>) return j.k == 1 ? j.b : j.n != 0;\n"
	"  else if constexpr (std::is_same_v<T, char>) return j.s.empty() ? (char)j.i : j.s[0];\n"
	"  else if constexpr (std::is_integral_v<T>) return (T)(j.isint ? j.i : (long long)j.n);\n"
	"  else if constexpr (std::is_floating_point_v<T>) return (T)(j.isint ? (double)j.i : j.n);\n"
	"  else if constexpr (std::is_same_v<T, std::string>) return j.s;\n"
	"  else if constexpr (is_vec<T>::value) { T v; for (const J &x : j.a) v.push_back(get<typename T::value_type>(x));\n"
	"    return v; }\n"
	"  else static_assert(no<T>::value, \"call-based C++: a parameter type the harness cannot read from JSON\"); }\n"
	"static void quote(std::string &o, const std::string &s) { o += '\"';\n"
	"  for (unsigned char c : s) { if (c == '\"' || c == '\\\\') { o += '\\\\'; o += (char)c; }\n"
	"    else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, \"\\\\u%04x\", c); o += b; } else o += (char)c; }\n"
	"  o += '\"'; }\n"
	"template <class T> void put(std::string &o, const T &v) {\n"
	"  if constexpr (std::is_same_v<T, bool>) o += v ? \"true\" : \"false\";\n"
	"  else if constexpr (std::is_same_v<T, char>) quote(o, std::string(1, v));\n"
	"  else if constexpr (std::is_integral_v<T>) o += std::to_string(v);\n"
	"  else if constexpr (std::is_floating_point_v<T>) { if (!std::isfinite((double)v)) { o += \"null\"; return; }\n"
	"    char b[40]; std::snprintf(b, sizeof b, \"%.17g\", (double)v); o += b; }\n"
	"  else if constexpr (std::is_convertible_v<T, std::string>) quote(o, std::string(v));\n"
	"  else if constexpr (is_pair<T>::value) { o += '['; put(o, v.first); o += ','; put(o, v.second); o += ']'; }\n"
	"  else { o += '['; bool first = true; for (const auto &x : v) { if (!first) o += ','; first = false; put(o, x); }\n"
	"    o += ']'; } }\n"
	"template <class R, class... A, std::size_t... I, class F>\n"
	"std::string call(F &&f, const J &args, std::index_sequence<I...>) {\n"
	"  if (args.a.size() != sizeof...(A)) {\n"
	"    std::fprintf(stderr, \"\\n" PD_JHARNESS_SAYS "%zu arguments given, the function takes %zu\\n\", args.a.size(), sizeof...(A));\n"
	"    std::exit(3); }\n"
	"  std::tuple<std::decay_t<A>...> t{get<std::decay_t<A>>(args.a[I])...};\n"
	"  std::string o;\n"
	"  if constexpr (std::is_void_v<R>) { f(std::get<I>(t)...); o = \"null\"; }\n"
	"  else put(o, f(std::get<I>(t)...));\n"
	"  return o; }\n"
	"template <class R, class... A> std::string run(R (*f)(A...), const J &args) {\n"
	"  return call<R, A...>([f](auto &...x) -> R { return f(x...); }, args, std::index_sequence_for<A...>{}); }\n"
	"template <class C, class R, class... A> std::string run(R (C::*f)(A...), const J &args) {\n"
	"  C c; return call<R, A...>([&](auto &...x) -> R { return (c.*f)(x...); }, args, std::index_sequence_for<A...>{}); }\n"
	"template <class C, class R, class... A> std::string run(R (C::*f)(A...) const, const J &args) {\n"
	"  C c; return call<R, A...>([&](auto &...x) -> R { return (c.*f)(x...); }, args, std::index_sequence_for<A...>{}); }\n"
	"} /* namespace paddock_harness */\n"
	"int main() {\n"
	"  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());\n"
	"  paddock_harness::P p{in.c_str()};\n"
	"  paddock_harness::J args = p.val();\n"
	"  if (p.bad || args.k != 4) { std::fputs(\"\\n" PD_JHARNESS_SAYS "the arguments are not a JSON list\\n\", stderr); return 3; }\n"
	"  int out = dup(1);\n"
	"  std::fflush(stdout); dup2(2, 1);\n"
	"  std::string r = paddock_harness::run(";

static bool ident_char(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whether the source defines (or declares) class or struct Solution: then fn_name is its member. */
static bool has_solution(const char *code, size_t len)
{
	for (size_t i = 0; i + 8 <= len; i++) {
		if (memcmp(code + i, "Solution", 8) || (i > 0 && ident_char(code[i - 1])) ||
		    (i + 8 < len && ident_char(code[i + 8])))
			continue;
		size_t k = i;
		while (k > 0 && (code[k - 1] == ' ' || code[k - 1] == '\t' || code[k - 1] == '\n' || code[k - 1] == '\r'))
			k--;
		size_t w = k;
		while (w > 0 && ident_char(code[w - 1]))
			w--;
		if ((k - w == 5 && !memcmp(code + w, "class", 5)) || (k - w == 6 && !memcmp(code + w, "struct", 6)))
			return true;
	}
	return false;
}

bool pd_jharness_supported(const pd_language *l)
{
	return !strcmp(l->template, "python") || !strcmp(l->template, "node") || !strcmp(l->template, "cpp");
}

int pd_jharness_source(const pd_language *l, const pd_problem *p, const char *code, size_t len, char **out,
		       size_t *out_len, pd_err *e)
{
	*out = NULL;
	*out_len = 0;
	if (strcmp(l->template, "cpp"))
		return 0; /* interpreted: the harness is a file of its own (pd_jharness_file) */
	char tail[512];
	int n = has_solution(code, len)
			? snprintf(tail, sizeof tail, "&Solution::%s, args);\n", p->fn_name)
			: snprintf(tail, sizeof tail, "&%s, args);\n", p->fn_name);
	n += snprintf(tail + n, sizeof tail - (size_t)n,
		      "  std::cout.flush(); std::fflush(stdout);\n"
		      "  r += '\\n';\n"
		      "  return write(out, r.data(), r.size()) == (ssize_t)r.size() ? 0 : 3;\n}\n");
	size_t total = len + sizeof harness_cpp - 1 + (size_t)n;
	char *s = malloc(total + 1);
	if (!s)
		return pd_fail(e, ENOMEM, "harness");
	memcpy(s, code, len);
	memcpy(s + len, harness_cpp, sizeof harness_cpp - 1);
	memcpy(s + len + sizeof harness_cpp - 1, tail, (size_t)n);
	s[total] = 0;
	*out = s;
	*out_len = total;
	return 0;
}

bool pd_jharness_file(const pd_language *l, pd_jfile *f)
{
	if (!strcmp(l->template, "python")) {
		*f = (pd_jfile){PD_JHARNESS_PY, harness_py, sizeof harness_py - 1};
		return true;
	}
	if (!strcmp(l->template, "node")) {
		*f = (pd_jfile){PD_JHARNESS_JS, harness_js, sizeof harness_js - 1};
		return true;
	}
	return false;
}

void pd_jharness_argv(const pd_language *l, pd_jprog *cand)
{
	if (!strcmp(l->template, "python")) {
		cand->argv[0] = (char *)"python3";
		cand->argv[1] = (char *)PD_JHARNESS_PY;
	} else if (!strcmp(l->template, "node")) {
		cand->argv[0] = (char *)"node";
		cand->argv[1] = (char *)PD_JHARNESS_JS;
	} else {
		return; /* compiled with the submission: the program itself */
	}
	cand->argv[2] = NULL;
	cand->argc = 2;
}
