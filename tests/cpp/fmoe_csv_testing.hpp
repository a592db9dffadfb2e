// The fmoe rows as the tests read them: parsed from CSV text at run time (our aiter_fmoe.csv, or
// AITER's own hsa/<arch>/fmoe/<act>/fmoe_*.csv), apart from the X-macro table the library builds,
// so a selection test compares the library with rows it did not generate.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fmoe_testing {

struct CsvRow {
  std::string symbol, code_object, out, quant, gate, act;
  int tkw1 = 0, atm = 0, vskip = 0, smf = 0, tgs = 0, ps = 0, sub_m = 0, sub_n = 0, flat = 0;
  int kernarg = 0;
  bool gfx942 = false, gfx950 = false;

  bool on(const std::string& arch) const { return arch == "gfx942" ? gfx942 : gfx950; }
  // The AITER list (CSV name) of the row.
  std::string list() const {
    return "fmoe_" + out + "_" + quant + "_" + gate + "_" + act + (tkw1 ? "_tkw1" : "");
  }
};

// A CSV as header-named cells per row.
inline std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::vector<std::map<std::string, std::string>> rows;
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& s) {
    std::vector<std::string> cells;
    std::stringstream ss(s);
    std::string c;
    while (std::getline(ss, c, ',')) cells.push_back(c);
    return cells;
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (header.empty()) {
      header = split(line);
      continue;
    }
    const auto cells = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

inline int num(const std::map<std::string, std::string>& r, const std::string& key) {
  const auto it = r.find(key);
  return it == r.end() || it->second.empty() ? 0 : std::atoi(it->second.c_str());
}

// Our aiter_fmoe.csv.
inline std::vector<CsvRow> our_rows(const std::string& path) {
  std::vector<CsvRow> out;
  for (const auto& r : read_csv(path)) {
    CsvRow c;
    c.symbol = r.at("symbol");
    c.code_object = r.at("code_object");
    c.out = r.at("out");
    c.quant = r.at("quant");
    c.gate = r.at("gate");
    c.act = r.at("act");
    c.tkw1 = num(r, "tkw1");
    c.atm = num(r, "atm");
    c.vskip = num(r, "vskip");
    c.smf = num(r, "smf");
    c.tgs = num(r, "tg_num_perCU");
    c.ps = num(r, "ps");
    c.sub_m = num(r, "subGU_m");
    c.sub_n = num(r, "subGU_n");
    c.flat = num(r, "flat");
    c.kernarg = num(r, "kernarg_bytes");
    c.gfx942 = num(r, "on_gfx942") != 0;
    c.gfx950 = num(r, "on_gfx950") != 0;
    out.push_back(c);
  }
  return out;
}

// One AITER list of one arch, in its CSV's order (empty when the file is absent).
inline std::vector<CsvRow> aiter_rows(const std::string& root, const std::string& arch,
                                      const CsvRow& list) {
  std::vector<CsvRow> out;
  const std::string path = root + "/hsa/" + arch + "/fmoe/" + list.act + "/" + list.list() + ".csv";
  for (const auto& r : read_csv(path)) {
    CsvRow c = list;
    c.symbol = r.at("knl_name");
    c.code_object = "fmoe/" + list.act + "/" + r.at("co_name");
    c.atm = num(r, "atm");
    c.vskip = num(r, "vskip");
    c.smf = num(r, "smf");
    c.tgs = num(r, "tg_num_perCU");
    c.ps = num(r, "ps");
    c.sub_m = num(r, "subGU_m");
    c.sub_n = num(r, "subGU_n");
    c.flat = num(r, "flat");
    c.gfx942 = arch == "gfx942";
    c.gfx950 = arch == "gfx950";
    out.push_back(c);
  }
  return out;
}

// The AITER checkout the tests read, if any: $JAX_AITER_AITER_ROOT, else the build's.
inline std::string aiter_root(const char* configured) {
  const char* env = std::getenv("JAX_AITER_AITER_ROOT");
  if (env != nullptr && *env != '\0') return env;
  return configured != nullptr ? configured : "";
}

}  // namespace fmoe_testing
