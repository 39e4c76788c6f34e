#!/usr/bin/env bash
# Call-based problems ({"in_outs": {..., "fn_name"}}) in every language with a harness: python, node
# and C++ (a free function or a member of Solution; parameter types read from the signature:
# integers, floats, bool, strings, vectors, nested vectors; the return as JSON). The submission's own
# prints do not reach the result; a wrong function fails; C and bash are refused, naming the
# languages that can.
source "$(dirname "$0")/api.sh"
plan 20

start_daemon
ok $? "daemon started"

two_sum='"in_outs":{"inputs":[[[2,7,11,15],9],[[3,2,4],6]],"outputs":[[0,1],[1,2]],"fn_name":"twoSum"}'
judge() { post_json /v1/judge "{\"problem\":{$1},\"language\":\"$2\",\"code\":$3,\"cache\":false}"; }
verdict() { jb '[.verdict.output.status, .failure_class, (.tests|map(.status)|join(","))] | join(" ")'; }

judge "$two_sum" nodejs "$(jq -Rs . <<'EOF_C'
function twoSum(nums, target) {
  console.log('noise on stdout');
  const seen = new Map();
  for (let i = 0; i < nums.length; i++) {
    if (seen.has(target - nums[i])) return [seen.get(target - nums[i]), i];
    seen.set(nums[i], i);
  }
}
EOF_C
)"
is "$(verdict)" "pass none AC,AC" "node: a top-level function, its console.log kept out of the result: pass"

judge "$two_sum" javascript "$(jq -Rs . <<'EOF_C'
class Solution {
  twoSum(nums, target) { process.stdout.write('[0, 1]\n'); return [nums.length, target]; }
}
EOF_C
)"
is "$(verdict)" "fail none WA,WA" "node: a Solution method that returns the wrong value (and prints the right one): fail"

judge "$two_sum" nodejs '"module.exports.twoSum = (n, t) => { for (let i = 0; i < n.length; i++) for (let j = i + 1; j < n.length; j++) if (n[i] + n[j] === t) return [i, j]; };"'
is "$(verdict)" "pass none AC,AC" "node: an exported function: pass"

judge "$two_sum" cpp "$(jq -Rs . <<'EOF_C'
#include <vector>
#include <unordered_map>
#include <iostream>
using namespace std;
class Solution {
public:
    vector<int> twoSum(vector<int>& nums, int target) {
        cout << "noise on stdout" << endl;
        unordered_map<int, int> seen;
        for (int i = 0; i < (int)nums.size(); i++) {
            if (seen.count(target - nums[i])) return {seen[target - nums[i]], i};
            seen[nums[i]] = i;
        }
        return {};
    }
};
EOF_C
)"
is "$(verdict)" "pass none AC,AC" "C++: a LeetCode-style Solution method (vector<int>& parameter), its cout kept out: pass"
is "$(jb .compile.status)" pass "... compiled once"

judge '"in_outs":{"inputs":[[[[1,2],[3,4]],"ab",true,2.5]],"outputs":[[10,"ab!",false,5.0]],"fn_name":"mix"}' cpp "$(jq -Rs . <<'EOF_C'
#include <string>
#include <tuple>
#include <vector>
struct R { };
std::vector<std::string> unused;
auto mix(const std::vector<std::vector<long long>> &m, std::string s, bool b, double x) {
    long long sum = 0;
    for (auto &row : m) for (long long v : row) sum += v;
    return std::make_pair(std::make_pair(sum, s + "!"), std::make_pair(!b, x * 2));
}
EOF_C
)"
is "$(verdict)" "fail none WA" "C++: nested pairs come out as nested lists (the answer is flat): fail, not a crash"

judge '"in_outs":{"inputs":[[[[1,2],[3,4]],"ab",true,2.5]],"outputs":[[10,"ab!",false,5.0]],"fn_name":"mix"}' cpp "$(jq -Rs . <<'EOF_C'
#include <string>
#include <vector>
std::vector<std::string> mix(const std::vector<std::vector<long long>> &m, std::string s, bool b, double x) {
    long long sum = 0;
    for (auto &row : m) for (long long v : row) sum += v;
    return {std::to_string(sum), s + "!", b ? "false" : "true", std::to_string(x * 2)};
}
EOF_C
)"
is "$(verdict)" "fail none WA" "C++: strings where numbers are expected: fail"

judge '"in_outs":{"inputs":[[[[1,2],[3,4]],"ab",true,2.5]],"outputs":[[10,5.0]],"fn_name":"mix"}' cpp "$(jq -Rs . <<'EOF_C'
#include <string>
#include <vector>
std::vector<double> mix(const std::vector<std::vector<long long>> &m, std::string s, bool b, double x) {
    long long sum = 0;
    for (auto &row : m) for (long long v : row) sum += v;
    return {(double)sum, b && s == "ab" ? x * 2 : -1};
}
EOF_C
)"
is "$(verdict)" "pass none AC" "C++: a free function over a nested vector, a string, a bool and a double: pass"

judge "$two_sum" cpp '"#include <vector>\nstd::vector<int> twoSum(std::vector<int> nums) { return {0, 1}; }"'
is "$(verdict)" "fail none RE,RE" "C++: a function taking fewer arguments than the test gives: the harness says so (RE), fail"
like "$(jb '.tests[0].message')" "exit code 3" "... exit 3"
is "$(jb '.tests[0].harness')" "2 arguments given, the function takes 1" "... and the harness's own message in the test's record"

# a misnamed function: the harness says so (not only "exit code"), and the stderr tail is kept
judge "$two_sum" python '"import sys\nprint(\"loading\", file=sys.stderr)\ndef two_sum(nums, target):\n    return [0, 1]\n"'
is "$(jb '[.tests[0].status, .tests[0].message, .tests[0].harness] | join("/")')" \
  "RE/exit code 3/the submission defines no function twoSum (nor a method of class Solution)" \
  "python: a misnamed function: RE with the harness's message"
like "$(jb '.tests[0].stderr')" "^loading" "... and the submission's stderr tail ($(jb .tests[0].stderr_bytes) bytes)"
judge "$two_sum" nodejs '"function two_sum(n, t) { return [0, 1]; }"'
is "$(jb '[.tests[0].status, .tests[0].harness] | join("/")')" \
  "RE/the submission defines no function twoSum (nor a method of class Solution)" "node: a misnamed function: the harness says so"
judge "$two_sum" python '"import sys\ndef twoSum(n, t):\n    sys.stderr.write(\"x\" * 5000 + \"END\")\n    raise ValueError(\"boom\")\n"'
is "$(jb '[.tests[0].status, (.tests[0].harness|tostring), (.tests[0].stderr|length <= 1024|tostring), (.tests[0].stderr|test("ValueError: boom"))|tostring] | join("/")')" \
  "RE/null/true/true" "python: the function raises: no harness message, the stderr tail (capped at 1 KiB) ends with the traceback"
is "$(jb '.tests[0].stderr_bytes > 5000')" true "... stderr_bytes counts all of it"

judge "$two_sum" cpp '"int main() { return 0 }"'
is "$(jb '[.verdict.output.status, .failure_class] | join(" ")')" "fail compile_error" "C++: no such function: compile_error"

judge "$two_sum" c '"int main(void) { return 0; }"'
is "$CODE" 400 "C: refused (400)"
like "$(jb .error)" "call-based.*python, node or cpp" "... naming the languages that can"
