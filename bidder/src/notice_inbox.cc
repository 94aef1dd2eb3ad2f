#include "notice_inbox.h"

#include <charconv>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "rtb/core/log.h"
#include "rtb/core/text.h"

namespace rtb::bidder {

std::string EncodeForwardedNotice(const ForwardedNotice& n, std::string_view topic,
                                  const MarketKeys* keys) {
  JsonWriter w(JsonWriter::Escaped(n.target) + 64);
  w.Raw("{\"notice\":");
  w.Str(n.target);
  w.Raw(",\"at\":");
  w.Int(n.received_ms);
  w.Raw('}');
  std::string json = std::move(w).Take();
  return keys != nullptr ? keys->Seal(topic, json) : json;
}

Result<ForwardedNotice> DecodeForwardedNotice(std::string_view payload, std::string_view topic,
                                              const MarketKeys* keys) {
  std::string body(payload);
  if (keys != nullptr) {
    const SealCheck c = keys->Open(topic, payload, &body);
    if (c != SealCheck::kOk) return Status::InvalidArgument(SealCheckName(c));
  }
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("notice") || !j["notice"].is_string() || !j.contains("at") ||
      !j["at"].is_number_integer()) {
    return Status::InvalidArgument("not_a_notice");
  }
  ForwardedNotice n;
  n.target = j["notice"].get<std::string>();
  n.received_ms = j["at"].get<int64_t>();
  if (n.target.rfind("/notice/", 0) != 0) return Status::InvalidArgument("not_a_notice");
  return n;
}

struct NoticeInbox::State {
  Options opt;
  std::unique_ptr<kafka::Consumer> consumer;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> booked{0}, refused{0};
  std::map<int32_t, int64_t> next;  // partition -> next offset to read (the thread's)
  bool dirty = false;
  log::RateLimit refusals{3, std::chrono::seconds(60)};

  std::string OffsetKey(int32_t p) const {
    return "notice_inbox/" + opt.topic + "/" + std::to_string(p);
  }

  void KeepOffsets() {
    if (!dirty) return;
    for (const auto& [p, off] : next) {
      if (const Status st = opt.state->PutMeta(OffsetKey(p), std::to_string(off)); !st.ok()) {
        log::Get("notices").warn("notice inbox offsets not kept: {}", st.message());
        return;
      }
    }
    dirty = false;
  }

  // One message: a notice of this bidder's bids is booked (tried again while the state store
  // cannot take it); other bidders' are skipped.
  void Take(const kafka::Message& m) {
    if (m.key() == opt.name) {
      auto notice = DecodeForwardedNotice(m.payload(), opt.topic, opt.keys.get());
      if (!notice.ok()) {
        refused.fetch_add(1);
        uint64_t skipped = 0;
        if (refusals.Allow(&skipped)) {
          log::Get("notices").warn(
              "forwarded notice refused on {} partition {} offset {}: {} ({} more since)",
              opt.topic, m.partition(), m.offset(), notice.status().message(), skipped);
        }
      } else {
        while (!opt.apply(*notice) && !stop.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        booked.fetch_add(1);
      }
    }
    next[m.partition()] = m.offset() + 1;
    dirty = true;
  }

  // The topic's partitions from the offsets kept (or its beginning); waits for the topic.
  bool AssignAll() {
    bool warned = false;
    while (!stop.load()) {
      auto n = consumer->PartitionCount(opt.topic, 1000);
      if (n.ok() && *n > 0) {
        std::vector<kafka::TopicPartition> parts;
        for (int32_t p = 0; p < *n; ++p) {
          auto kept = opt.state->GetMeta(OffsetKey(p));
          int64_t off = kafka::kOffsetBeginning;
          if (kept.ok()) std::from_chars(kept->data(), kept->data() + kept->size(), off);
          parts.push_back({opt.topic, p, off});
          next[p] = off;
        }
        return consumer->Assign(parts).ok();
      }
      if (!warned) {
        warned = true;
        log::Get("notices").warn(
            "notices topic {} not found: notices other bidders take for this bidder's bids wait "
            "until it exists",
            opt.topic);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  void Run() {
    kafka::NiceThisThread("rtb-notices", opt.thread_nice);
    if (!AssignAll()) return;
    auto kept_at = std::chrono::steady_clock::now();
    while (!stop.load()) {
      if (std::optional<kafka::Message> m = consumer->Poll(100); m && m->ok()) Take(*m);
      if (std::chrono::steady_clock::now() - kept_at >= std::chrono::seconds(1)) {
        KeepOffsets();
        kept_at = std::chrono::steady_clock::now();
      }
    }
    KeepOffsets();
  }
};

Result<std::unique_ptr<NoticeInbox>> NoticeInbox::Start(Options opt) {
  auto inbox = std::unique_ptr<NoticeInbox>(new NoticeInbox());
  inbox->state_ = std::make_unique<State>();
  State& s = *inbox->state_;
  s.opt = std::move(opt);
  kafka::Consumer::Options co;
  static_cast<kafka::ClientOptions&>(co) = s.opt.client;
  co.group_id = "rtb-notices-" + s.opt.name;
  RTB_ASSIGN_OR_RETURN(s.consumer, kafka::Consumer::Create(std::move(co)));
  s.thread = std::thread([&s] { s.Run(); });
  return inbox;
}

NoticeInbox::~NoticeInbox() {
  if (state_ == nullptr) return;
  state_->stop.store(true);
  if (state_->thread.joinable()) state_->thread.join();
}

uint64_t NoticeInbox::booked() const { return state_->booked.load(); }
uint64_t NoticeInbox::refused() const { return state_->refused.load(); }

}  // namespace rtb::bidder
