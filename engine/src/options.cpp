#include "options.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace rooftop {

uint64_t parse_size(const std::string& s) {
  if (s.empty()) throw std::invalid_argument("empty size");
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) i++;
  if (i == 0) throw std::invalid_argument("'" + s + "' is not a size (e.g. 4096, 64KiB, 4MiB, 1GiB)");
  std::string num = s.substr(0, i), unit = s.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  uint64_t mult;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kib") mult = 1ULL << 10;
  else if (unit == "m" || unit == "mib") mult = 1ULL << 20;
  else if (unit == "g" || unit == "gib") mult = 1ULL << 30;
  else if (unit == "t" || unit == "tib") mult = 1ULL << 40;
  else if (unit == "kb") mult = 1000ULL;
  else if (unit == "mb") mult = 1000000ULL;
  else if (unit == "gb") mult = 1000000000ULL;
  else throw std::invalid_argument("unknown size unit '" + s.substr(i) + "' in '" + s + "' (use KiB, MiB, GiB)");
  if (num.size() > 15) throw std::invalid_argument("size '" + s + "' is too large");
  uint64_t v = std::stoull(num);
  if (v > (UINT64_MAX >> 1) / mult) throw std::invalid_argument("size '" + s + "' is too large");
  return v * mult;
}

double parse_seconds(const std::string& s) {
  std::string t = s;
  double mult = 1;
  if (t.size() > 2 && t.substr(t.size() - 2) == "ms") {
    mult = 1e-3;
    t = t.substr(0, t.size() - 2);
  } else if (t.size() > 1 && t.back() == 's') {
    t.pop_back();
  }
  size_t used = 0;
  double v;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != t.size() || !std::isfinite(v) || v < 0)
    throw std::invalid_argument("'" + s + "' is not a duration (e.g. 5, 2.5s, 250ms)");
  return v * mult;
}

Options::Options(std::string command, std::string summary, std::vector<OptSpec> specs)
    : command_(std::move(command)), summary_(std::move(summary)), specs_(std::move(specs)) {
  for (auto& s : specs_) values_[s.name] = s.def;
}

const OptSpec& Options::spec(const std::string& name) const {
  for (auto& s : specs_)
    if (s.name == name) return s;
  throw std::logic_error("undeclared option " + name);
}

void Options::validate(const OptSpec& s, const std::string& v) const {
  const std::string where = "--" + s.name + " " + (v.empty() ? "''" : v) + ": ";
  try {
    switch (s.kind) {
      case OptKind::Str: break;
      case OptKind::Bool:
        if (v != "true" && v != "false") throw std::invalid_argument("expected true or false");
        break;
      case OptKind::Int: {
        size_t used = 0;
        long long x = std::stoll(v, &used);
        (void)x;
        if (used != v.size()) throw std::invalid_argument("not an integer");
        break;
      }
      case OptKind::Size: parse_size(v); break;
      case OptKind::Seconds: parse_seconds(v); break;
      case OptKind::Choice: {
        std::stringstream ss(s.choices);
        std::string c;
        bool ok = false;
        while (std::getline(ss, c, '|'))
          if (c == v || (c.back() == '*' && v.rfind(c.substr(0, c.size() - 1), 0) == 0)) ok = true;
        if (!ok) throw std::invalid_argument("must be one of " + s.choices);
        break;
      }
    }
  } catch (const std::invalid_argument& e) {
    std::string why = e.what();
    if (why.rfind("stoll", 0) == 0 || why.empty()) why = "not an integer";
    throw UsageError(where + why);
  } catch (const std::out_of_range&) {
    throw UsageError(where + "out of range");
  }
}

void Options::set(const std::string& name, const std::string& value) {
  validate(spec(name), value);
  values_[name] = value;
  given_[name] = true;
}

bool Options::parse(int argc, char** argv) {
  for (int i = 0; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (a.rfind("--", 0) != 0)
      throw UsageError("unexpected argument '" + a + "' (options start with --; see " + command_ +
                       " --help)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (auto r = retired_.find(name); r != retired_.end()) throw UsageError(r->second);
    const OptSpec* s = nullptr;
    for (auto& sp : specs_)
      if (sp.name == name) s = &sp;
    if (!s) throw UsageError("unknown option --" + name + " (see " + command_ + " --help)");
    if (!has_value) {
      if (s->kind == OptKind::Bool) {
        value = "true";
      } else {
        if (i + 1 >= argc) throw UsageError("--" + name + " needs a value");
        value = argv[++i];
      }
    }
    set(name, value);
  }
  return true;
}

std::string Options::help() const {
  std::string h = "usage: rooftop-engine " + command_ + " [options]\n\n" + summary_ + "\n\noptions:\n";
  for (auto& s : specs_) {
    std::string left = "  --" + s.name;
    if (s.kind != OptKind::Bool) {
      switch (s.kind) {
        case OptKind::Int: left += " N"; break;
        case OptKind::Size: left += " SIZE"; break;
        case OptKind::Seconds: left += " SECONDS"; break;
        case OptKind::Choice: left += " " + s.choices; break;
        default: left += " VALUE"; break;
      }
    }
    if (left.size() < 34) left.resize(34, ' ');
    else left += "\n" + std::string(34, ' ');
    h += left + s.help;
    if (!s.def.empty() && s.kind != OptKind::Bool) h += " [default: " + s.def + "]";
    h += "\n";
  }
  h += "  -h, --help                      this text\n";
  return h;
}

void Options::retire(const std::string& name, const std::string& message) {
  retired_[name] = message;
}

void Options::record(const std::string& key, const std::string& value) {
  for (auto& r : records_)
    if (r.first == key) {
      r.second = value;
      return;
    }
  records_.emplace_back(key, value);
}

bool Options::has(const std::string& name) const {
  for (auto& s : specs_)
    if (s.name == name) return true;
  return false;
}

const std::string& Options::str(const std::string& name) const {
  spec(name);
  return values_.at(name);
}
int64_t Options::integer(const std::string& name) const { return std::stoll(str(name)); }
uint64_t Options::size(const std::string& name) const { return parse_size(str(name)); }
double Options::seconds(const std::string& name) const { return parse_seconds(str(name)); }
bool Options::flag(const std::string& name) const { return str(name) == "true"; }

void Options::write_json(JsonWriter& w) const {
  w.begin_object();
  for (auto& s : specs_) {
    std::string key = s.name;
    for (auto& c : key)
      if (c == '-') c = '_';
    const std::string& v = values_.at(s.name);
    w.key(key);
    if (v.empty() && s.kind != OptKind::Str && s.kind != OptKind::Choice) {
      w.null();
      continue;
    }
    switch (s.kind) {
      case OptKind::Str:
      case OptKind::Choice: w.value(v); break;
      case OptKind::Bool: w.value(v == "true"); break;
      case OptKind::Int: w.value(static_cast<int64_t>(std::stoll(v))); break;
      case OptKind::Size: w.value(parse_size(v)); break;
      case OptKind::Seconds: w.value(parse_seconds(v)); break;
    }
  }
  for (auto& [k, v] : records_) w.key(k).value(v);
  w.end_object();
}

}  // namespace rooftop
