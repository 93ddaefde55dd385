// re2-check: Google's RE2, the regular expression library Envoy's safe_regex uses, answering on
// stdin so a test can hold the operator's data-plane model (JavaScript's RegExp) to it.
//
// Each input line is a command and an argument in hex (any bytes, one line):
//   R <hex>   compile the regex (RE2's default options, as Envoy's GoogleReMatcher): prints
//             "ok <program size>" or "error <RE2's message>"
//   M <hex>   whole-match the value against the last regex (RE2::FullMatch): prints 1 or 0
#include <re2/re2.h>

#include <iostream>
#include <memory>
#include <string>

static std::string unhex(const std::string& s) {
  std::string out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(s.substr(i, 2), nullptr, 16)));
  }
  return out;
}

int main() {
  std::ios::sync_with_stdio(false);
  std::unique_ptr<RE2> re;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.size() < 2) continue;
    const std::string arg = unhex(line.substr(2));
    if (line[0] == 'R') {
      re = std::make_unique<RE2>(arg, RE2::Quiet);
      if (re->ok()) {
        std::cout << "ok " << re->ProgramSize() << "\n";
      } else {
        std::cout << "error " << re->error() << "\n";
      }
    } else if (line[0] == 'M') {
      std::cout << (re && re->ok() && RE2::FullMatch(arg, *re) ? "1" : "0") << "\n";
    } else {
      std::cout << "error unknown command\n";
    }
    std::cout.flush();
  }
  return 0;
}
