// The little JSON the tools speak: a call description read from Python or a command line, a plan
// or report written back. Only what those need (objects, arrays, strings without \u escapes beyond
// ASCII, numbers, true/false/null); never on a handler's execute path.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jax_aiter/core/status.hpp"

namespace jax_aiter::ffi {

struct Json {
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool flag = false;
  double number = 0;
  bool integral = false;  // the number was written without fraction or exponent
  std::string text;
  std::vector<Json> items;  // kArray
  struct Member;
  std::vector<Member> members;  // kObject, in order (not std::pair: clang-22 + libstdc++ 12)

  const Json* get(std::string_view key) const;
};

struct Json::Member {
  std::string key;
  Json value;
};

inline const Json* Json::get(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace json_detail {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Expected<Json> document() {
    auto v = value(0);
    if (!v) return v;
    skip();
    if (pos_ != s_.size()) return fail("trailing characters");
    return v;
  }

 private:
  Status fail(std::string_view what) const {
    return InvalidArgument(StrCat("jax_aiter: JSON: ", what, " at offset ", pos_));
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  Expected<std::string> string() {
    if (!eat('"')) return fail("expected a string");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        const char e = s_[pos_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': {
            if (pos_ + 4 > s_.size()) return fail("short \\u escape");
            const unsigned code = std::stoul(std::string(s_.substr(pos_, 4)), nullptr, 16);
            pos_ += 4;
            if (code > 0x7f) return fail("non-ASCII \\u escape");
            c = static_cast<char>(code);
            break;
          }
          default: c = e;  // \" \\ \/
        }
      }
      out += c;
    }
    if (!eat('"')) return fail("unterminated string");
    return out;
  }

  Expected<Json> value(int depth) {
    if (depth > 32) return fail("nested too deeply");
    skip();
    Json v;
    if (pos_ >= s_.size()) return fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.type = Json::Type::kObject;
      if (eat('}')) return v;
      do {
        auto key = string();
        if (!key) return key.status();
        if (!eat(':')) return fail("expected ':'");
        auto member = value(depth + 1);
        if (!member) return member;
        v.members.push_back(Json::Member{std::move(*key), std::move(*member)});
      } while (eat(','));
      if (!eat('}')) return fail("expected '}'");
    } else if (c == '[') {
      ++pos_;
      v.type = Json::Type::kArray;
      if (eat(']')) return v;
      do {
        auto item = value(depth + 1);
        if (!item) return item;
        v.items.push_back(std::move(*item));
      } while (eat(','));
      if (!eat(']')) return fail("expected ']'");
    } else if (c == '"') {
      auto s = string();
      if (!s) return s.status();
      v.type = Json::Type::kString;
      v.text = std::move(*s);
    } else if (word("true")) {
      v.type = Json::Type::kBool;
      v.flag = true;
    } else if (word("false")) {
      v.type = Json::Type::kBool;
    } else if (word("null")) {
      v.type = Json::Type::kNull;
    } else {
      const size_t start = pos_;
      v.integral = true;
      while (pos_ < s_.size() &&
             (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
              std::string_view("+-.eE").find(s_[pos_]) != std::string_view::npos)) {
        if (std::string_view(".eE").find(s_[pos_]) != std::string_view::npos) v.integral = false;
        ++pos_;
      }
      if (pos_ == start) return fail("unexpected character");
      const std::string digits(s_.substr(start, pos_ - start));
      char* end = nullptr;
      v.type = Json::Type::kNumber;
      v.number = std::strtod(digits.c_str(), &end);
      if (end != digits.c_str() + digits.size()) return fail("bad number");
    }
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace json_detail

inline Expected<Json> parse_json(std::string_view text) {
  return json_detail::Parser(text).document();
}

// A JSON string literal.
inline std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace jax_aiter::ffi
