#include "rtb/core/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

extern char** environ;

namespace rtb {

struct ConfigMap::Impl {
  YAML::Node node;
  std::set<std::string> read;
  std::string path;
  std::set<std::string> from_env;  // keys the environment set
};

namespace {

std::string Where(const std::string& file, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return file;
  return file + ":" + std::to_string(m.line + 1);
}

std::string Dotted(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// "kafka.brokers" -> "KAFKA_BROKERS", "advertisers[0].daily_budget" ->
// "ADVERTISERS_0_DAILY_BUDGET".
std::string EnvKey(const std::string& dotted) {
  std::string out;
  for (const char ch : dotted) {
    if (ch == ']') continue;
    out += ch == '.' || ch == '[' ? '_'
                                  : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return out;
}

// The content of a secret file (one trailing newline dropped), or an error naming the variable
// and the path (never the content).
Result<std::string> ReadSecretFile(const std::string& var, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument(var + ": cannot read " + path + ": " + std::strerror(errno));
  }
  std::ostringstream s;
  s << in.rdbuf();
  std::string v = s.str();
  if (!v.empty() && v.back() == '\n') v.pop_back();
  if (!v.empty() && v.back() == '\r') v.pop_back();
  return v;
}

}  // namespace

ConfigMap::ConfigMap(ConfigFile* file, std::shared_ptr<Impl> impl, std::string path)
    : file_(file), impl_(std::move(impl)), path_(std::move(path)) {}

bool ConfigMap::Has(const std::string& key) const {
  return impl_->node.IsMap() && impl_->node[key].IsDefined() && !impl_->node[key].IsNull();
}

bool ConfigMap::FromEnvironment(const std::string& key) const {
  return impl_->from_env.count(key) != 0;
}

template <typename T>
bool ConfigMap::FromEnv(const std::string& key, T* out, const char* type_name) {
  const std::string var = file_->EnvironmentName(Dotted(path_, key));
  if (var.empty()) return false;
  const char* v = std::getenv(var.c_str());
  if constexpr (std::is_same_v<T, std::string>) {
    if (v == nullptr) {
      const char* path = std::getenv((var + "_FILE").c_str());
      if (path == nullptr) return false;
      auto content = ReadSecretFile(var + "_FILE", path);
      if (!content.ok()) {
        file_->Error(content.status().message());
      } else {
        *out = std::move(*content);
        impl_->from_env.insert(key);
      }
      return true;
    }
    *out = v;  // taken whole: a secret may hold any character
    impl_->from_env.insert(key);
    return true;
  } else {
    if (v == nullptr) return false;
    try {
      const YAML::Node n = YAML::Load(v);
      if constexpr (std::is_arithmetic_v<T>) {
        if (!n.IsScalar()) throw YAML::Exception(YAML::Mark::null_mark(), "not a scalar");
      } else {
        if (!n.IsSequence()) throw YAML::Exception(YAML::Mark::null_mark(), "not a list");
      }
      *out = n.as<T>();
      impl_->from_env.insert(key);
    } catch (const YAML::Exception&) {
      file_->Error(var + " (environment): key '" + Dotted(path_, key) + "' expects " + type_name);
    }
    return true;
  }
}

template <typename T>
void ConfigMap::GetScalar(const std::string& key, T* out, const char* type_name) {
  impl_->read.insert(key);
  if (FromEnv(key, out, type_name)) return;
  if (!Has(key)) return;
  const YAML::Node v = impl_->node[key];
  if (!v.IsScalar()) {
    file_->Error(Where(file_->name(), v) + ": key '" + Dotted(path_, key) + "' expects " +
                 type_name);
    return;
  }
  try {
    *out = v.as<T>();
  } catch (const YAML::Exception&) {
    file_->Error(Where(file_->name(), v) + ": key '" + Dotted(path_, key) + "' expects " +
                 type_name + ", got '" + v.Scalar() + "'");
  }
}

void ConfigMap::Get(const std::string& key, int64_t* out) { GetScalar(key, out, "an integer"); }
void ConfigMap::Get(const std::string& key, int* out) { GetScalar(key, out, "an integer"); }
void ConfigMap::Get(const std::string& key, uint64_t* out) {
  GetScalar(key, out, "a non-negative integer");
}
void ConfigMap::Get(const std::string& key, double* out) { GetScalar(key, out, "a number"); }
void ConfigMap::Get(const std::string& key, bool* out) { GetScalar(key, out, "true or false"); }
void ConfigMap::Get(const std::string& key, std::string* out) { GetScalar(key, out, "a string"); }

template <typename T>
void ConfigMap::GetList(const std::string& key, std::vector<T>* out, const char* what) {
  impl_->read.insert(key);
  if (FromEnv(key, out, (std::string("a list of ") + what).c_str())) return;
  if (!Has(key)) return;
  const YAML::Node node = impl_->node[key];
  const std::string err = ": key '" + Dotted(path_, key) + "' expects a list of " + what;
  if (!node.IsSequence()) return file_->Error(Where(file_->name(), node) + err);
  std::vector<T> v;
  for (const auto& item : node) {
    try {
      v.push_back(item.as<T>());
    } catch (const YAML::Exception&) {
      return file_->Error(Where(file_->name(), item) + err);
    }
  }
  *out = std::move(v);
}

void ConfigMap::Get(const std::string& key, std::vector<double>* out) {
  GetList(key, out, "numbers");
}
void ConfigMap::Get(const std::string& key, std::vector<int>* out) {
  GetList(key, out, "integers");
}
void ConfigMap::Get(const std::string& key, std::vector<std::string>* out) {
  GetList(key, out, "strings");
}

void ConfigMap::Get(const std::string& key, std::vector<std::pair<std::string, std::string>>* out) {
  impl_->read.insert(key);
  if (Has(key)) {
    const YAML::Node node = impl_->node[key];
    const std::string err =
        ": key '" + Dotted(path_, key) + "' expects a mapping of names to single values";
    if (!node.IsMap()) return file_->Error(Where(file_->name(), node) + err);
    std::vector<std::pair<std::string, std::string>> v;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
        return file_->Error(Where(file_->name(), kv.first) + err);
      }
      v.emplace_back(kv.first.Scalar(), kv.second.Scalar());
    }
    *out = std::move(v);
  }
  // One variable per name: <variable>_<NAME> (or its _FILE form) sets or replaces it, the name
  // read back in lower case with '_' as '.' (names of this kind, librdkafka's, use no '_').
  const std::string var = file_->EnvironmentName(Dotted(path_, key));
  if (var.empty()) return;
  const std::string head = var + "_";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || entry.substr(0, head.size()) != head) continue;
    std::string suffix(entry.substr(head.size(), eq - head.size()));
    std::string value(entry.substr(eq + 1));
    if (suffix.size() > 5 && suffix.compare(suffix.size() - 5, 5, "_FILE") == 0) {
      suffix.resize(suffix.size() - 5);
      auto content = ReadSecretFile(head + suffix + "_FILE", value);
      if (!content.ok()) return file_->Error(content.status().message());
      value = std::move(*content);
    }
    std::string name;
    for (const char ch : suffix) {
      name += ch == '_' ? '.' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    if (name.empty()) continue;
    auto it =
        std::find_if(out->begin(), out->end(), [&](const auto& kv) { return kv.first == name; });
    if (it != out->end()) {
      it->second = std::move(value);
    } else {
      out->emplace_back(name, std::move(value));
    }
    impl_->from_env.insert(key + "." + name);
  }
}

ConfigMap ConfigMap::Section(const std::string& key) {
  impl_->read.insert(key);
  auto child = std::make_shared<Impl>();
  if (Has(key)) {
    const YAML::Node v = impl_->node[key];
    if (!v.IsMap()) {
      file_->Error(Where(file_->name(), v) + ": key '" + Dotted(path_, key) +
                   "' expects a mapping of settings");
    } else {
      child->node = v;
    }
  }
  child->path = Dotted(path_, key);
  file_->maps_.push_back(child);
  return ConfigMap(file_, child, child->path);
}

std::vector<ConfigMap> ConfigMap::List(const std::string& key) {
  impl_->read.insert(key);
  std::vector<ConfigMap> out;
  if (!Has(key)) return out;
  const YAML::Node v = impl_->node[key];
  if (!v.IsSequence()) {
    file_->Error(Where(file_->name(), v) + ": key '" + Dotted(path_, key) + "' expects a list");
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    auto child = std::make_shared<Impl>();
    const std::string p = Dotted(path_, key) + "[" + std::to_string(i) + "]";
    if (!v[i].IsMap()) {
      file_->Error(Where(file_->name(), v[i]) + ": '" + p + "' expects a mapping");
    } else {
      child->node = v[i];
    }
    child->path = p;
    file_->maps_.push_back(child);
    out.push_back(ConfigMap(file_, child, p));
  }
  return out;
}

void ConfigMap::Check(bool ok, const std::string& key, const std::string& what) {
  if (ok) return;
  if (FromEnvironment(key)) {
    return file_->Error(file_->EnvironmentName(Dotted(path_, key)) + " (environment): key '" +
                        Dotted(path_, key) + "' " + what);
  }
  const YAML::Node v = Has(key) ? impl_->node[key] : impl_->node;
  file_->Error(Where(file_->name(), v) + ": key '" + Dotted(path_, key) + "' " + what);
}

Result<std::unique_ptr<ConfigFile>> ConfigFile::Load(const std::string& path) {
  std::unique_ptr<ConfigFile> f(new ConfigFile());
  f->name_ = path;
  try {
    f->root_ = std::make_unique<YAML::Node>(YAML::LoadFile(path));
  } catch (const YAML::BadFile&) {
    return Status::NotFound(path + ": cannot open config file");
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) +
                                   ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
  return f;
}

Result<std::unique_ptr<ConfigFile>> ConfigFile::Parse(const std::string& text,
                                                      const std::string& name) {
  std::unique_ptr<ConfigFile> f(new ConfigFile());
  f->name_ = name;
  try {
    f->root_ = std::make_unique<YAML::Node>(YAML::Load(text));
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(name + ":" + std::to_string(e.mark.line + 1) +
                                   ": YAML syntax error: " + e.msg);
  }
  return f;
}

ConfigFile::~ConfigFile() = default;

ConfigMap ConfigFile::Root() {
  auto impl = std::make_shared<ConfigMap::Impl>();
  if (root_->IsMap()) {
    impl->node = *root_;
  } else if (!root_->IsNull()) {
    Error(name_ + ": the config must be a mapping of settings");
  }
  maps_.push_back(impl);
  return ConfigMap(this, impl, "");
}

void ConfigFile::UseEnvironment(std::string prefix) { env_prefix_ = std::move(prefix); }

std::string ConfigFile::EnvironmentName(const std::string& dotted) const {
  return env_prefix_.empty() ? std::string() : env_prefix_ + EnvKey(dotted);
}

void ConfigFile::Error(const std::string& msg) {
  if (first_error_.empty()) first_error_ = msg;
}

Status ConfigFile::Finish() {
  if (!first_error_.empty()) return Status::InvalidArgument(first_error_);
  for (const auto& m : maps_) {
    if (!m->node.IsMap()) continue;
    for (const auto& kv : m->node) {
      const std::string key = kv.first.as<std::string>();
      if (!m->read.count(key)) {
        return Status::InvalidArgument(Where(name_, kv.first) + ": unknown key '" +
                                       Dotted(m->path, key) + "'");
      }
    }
  }
  return Status::Ok();
}

}  // namespace rtb
