#include "kafka_read.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <memory>
#include <set>

namespace rtb::cli {

Status ReadWholeTopic(const std::string& bootstrap, const std::string& topic, int timeout_ms,
                      const std::function<void(int, int64_t, std::string_view)>& fn,
                      int64_t* not_retained) {
  if (not_retained != nullptr) *not_retained = 0;
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : {std::pair<const char*, std::string>{"bootstrap.servers", bootstrap},
                             {"group.id", "rtb-read-" + topic},
                             {"enable.auto.commit", "false"},
                             {"enable.partition.eof", "true"},
                             {"log_level", "3"}}) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::InvalidArgument(std::string("kafka config ") + k + ": " + err);
    }
  }
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (c == nullptr) return Status::Unavailable(std::string("kafka consumer: ") + err);
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> guard(c, [](rd_kafka_t* k) {
    rd_kafka_consumer_close(k);
    rd_kafka_destroy(k);
  });
  rd_kafka_poll_set_consumer(c);
  rd_kafka_topic_t* t = rd_kafka_topic_new(c, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t me = rd_kafka_metadata(c, 0, t, &md, timeout_ms);
  rd_kafka_topic_destroy(t);
  if (me != RD_KAFKA_RESP_ERR_NO_ERROR || md == nullptr || md->topic_cnt != 1 ||
      md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const std::string why = me != RD_KAFKA_RESP_ERR_NO_ERROR ? rd_kafka_err2str(me)
                            : md != nullptr && md->topic_cnt == 1
                                ? rd_kafka_err2str(md->topics[0].err)
                                : "no metadata";
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    return Status::Unavailable("topic " + topic + " at " + bootstrap + ": " + why);
  }
  const int partitions = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  std::set<int> open;
  for (int p = 0; p < partitions; ++p) {
    // Empty partitions give no EOF event before a message would; skip them by watermark.
    int64_t lo = 0, hi = 0;
    const bool known = rd_kafka_query_watermark_offsets(c, topic.c_str(), p, &lo, &hi,
                                                        timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR;
    if (known && not_retained != nullptr) *not_retained += lo;
    if (known && hi <= lo) continue;
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    open.insert(p);
  }
  rd_kafka_assign(c, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!open.empty() && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 200);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      open.erase(m->partition);
    } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      fn(m->partition, m->offset, std::string_view(static_cast<const char*>(m->payload), m->len));
    }
    rd_kafka_message_destroy(m);
  }
  if (!open.empty()) {
    return Status::Unavailable("topic " + topic + ": " + std::to_string(open.size()) +
                               " partitions not read to the end within " +
                               std::to_string(timeout_ms) + " ms");
  }
  return Status::Ok();
}

}  // namespace rtb::cli
