// RocksDB's own log, sent to the process's log (log.h) instead of a LOG file in the store's
// folder: warnings and above, rate-limited (5 lines a minute, then a count of the skipped ones),
// each line "rocksdb: <RocksDB's message>" on the component's logger. A LOG file sits on the disk
// it reports on: with that disk full, its second failed write aborted the process (Debian's
// RocksDB keeps its assertions). The store's failures themselves are its owner's to say.
//
// Library rtb_rocksdb_log (links RocksDB; rtb_core does not): every RocksDB store of the engine
// (the bidder's state, the learner's replay store) sets `options.info_log = NewProcessLogger(..)`.
//
// Thread-safe: RocksDB may log from any of its threads.
#pragma once

#include <memory>
#include <string>

namespace rocksdb {
class Logger;
}

namespace rtb::log {

// A RocksDB logger writing to log::Get(component) ("state", "replay", ...).
std::shared_ptr<rocksdb::Logger> NewProcessLogger(std::string component);

}  // namespace rtb::log
