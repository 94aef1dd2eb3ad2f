// Strict YAML configuration reading.
//
// Every config struct in the project documents each field where it is declared and is read
// through ConfigMap, which remembers which keys were read: a key the struct does not know is
// an error that names the file, the line and the key. Type and range errors name them too.
//
//   RTB_ASSIGN_OR_RETURN(ConfigFile file, ConfigFile::Load(path));
//   ConfigMap root = file.Root();
//   root.Get("seed", &cfg.seed);
//   ConfigMap world = root.Section("world");
//   world.Get("advertisers", &cfg.world.advertisers);
//   world.Check(cfg.world.advertisers > 0, "advertisers", "must be positive");
//   RTB_RETURN_IF_ERROR(file.Finish());  // unknown keys, first error
//
// A config a service reads (the bidder's) also takes every key from the environment
// (ConfigFile::UseEnvironment), as Prebid Server does with PBS_ variables.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rtb/core/status.h"

namespace YAML {
class Node;
}

namespace rtb {

class ConfigFile;

class ConfigMap {
 public:
  // Reads an optional key; absent leaves *out unchanged (the declared default).
  void Get(const std::string& key, int64_t* out);
  void Get(const std::string& key, int* out);
  void Get(const std::string& key, uint64_t* out);  // also size_t on LP64
  void Get(const std::string& key, double* out);
  void Get(const std::string& key, bool* out);
  void Get(const std::string& key, std::string* out);
  void Get(const std::string& key, std::vector<double>* out);
  void Get(const std::string& key, std::vector<int>* out);
  void Get(const std::string& key, std::vector<std::string>* out);
  // A mapping of names the project does not define (a client library's properties, say) to
  // scalar values, in file order. Its names are not checked: the library checks them.
  void Get(const std::string& key, std::vector<std::pair<std::string, std::string>>* out);
  // A nested mapping; absent gives an empty section (all defaults).
  ConfigMap Section(const std::string& key);
  // A list of mappings (for example advertisers); absent gives an empty list.
  std::vector<ConfigMap> List(const std::string& key);
  bool Has(const std::string& key) const;
  // Whether key's value came from the environment (ConfigFile::UseEnvironment), not the file.
  bool FromEnvironment(const std::string& key) const;
  // Records a range error for key unless ok.
  void Check(bool ok, const std::string& key, const std::string& what);
  // The dotted path of this section ("world.advertisers").
  const std::string& path() const { return path_; }

 private:
  friend class ConfigFile;

 public:
  struct Impl;

 private:
  ConfigMap(ConfigFile* file, std::shared_ptr<Impl> impl, std::string path);
  template <typename T>
  void GetScalar(const std::string& key, T* out, const char* type_name);
  template <typename T>
  void GetList(const std::string& key, std::vector<T>* out, const char* what);
  // The environment's value of key (UseEnvironment), read into *out: true when it set it (or
  // recorded an error naming the variable); false when no variable names the key.
  template <typename T>
  bool FromEnv(const std::string& key, T* out, const char* type_name);
  ConfigFile* file_;
  std::shared_ptr<Impl> impl_;
  std::string path_;
};

class ConfigFile {
 public:
  // Parses path; a YAML syntax error names the file and line.
  static Result<std::unique_ptr<ConfigFile>> Load(const std::string& path);
  // Parses text as if it came from a file named name (for tests).
  static Result<std::unique_ptr<ConfigFile>> Parse(const std::string& text,
                                                   const std::string& name);
  ~ConfigFile();
  ConfigMap Root();
  // The first error seen, else the first key no reader asked for. OK when the file is clean.
  Status Finish();
  // From now on every key read is also looked up in the environment, and the variable wins:
  // prefix + the key's dotted path in capitals with '.', '[' and ']' as '_' (kafka.brokers ->
  // RTB_KAFKA_BROKERS, advertisers[0].daily_budget -> RTB_ADVERTISERS_0_DAILY_BUDGET); a list
  // is written as YAML ("[1, 2]"). A string key also takes <variable>_FILE, a file whose content
  // (one trailing newline dropped) is the value: how secrets arrive. A mapping of names
  // (Get(key, vector<pair>)) takes one variable per name: <variable>_<NAME>, NAME the name in
  // capitals with '.' as '_' (kafka.properties' sasl.password: RTB_KAFKA_PROPERTIES_SASL_PASSWORD),
  // and its _FILE form. Errors name the variable, never its value.
  void UseEnvironment(std::string prefix);
  // The variable that sets key `dotted` ("kafka.brokers"), or "" without UseEnvironment.
  std::string EnvironmentName(const std::string& dotted) const;
  const std::string& name() const { return name_; }

 private:
  friend class ConfigMap;
  ConfigFile() = default;
  void Error(const std::string& msg);
  std::string name_;
  std::unique_ptr<YAML::Node> root_;
  std::vector<std::shared_ptr<ConfigMap::Impl>> maps_;
  std::string first_error_;
  std::string env_prefix_;  // UseEnvironment; "" = the file alone
};

}  // namespace rtb
