// Readiness probe for infra/kafka.sh, through Kafka's own admin client from the jars the broker runs
// on. It succeeds once the broker has joined the KRaft quorum and serves a cluster description (an
// open port alone is not enough) and its group coordinator answers. Run as a single-file source
// program: `java -cp "<libs>/*" BrokerProbe.java <bootstrap> <timeoutMs>`. Prints one line and
// exits 0 when the broker answers, 1 when it did not within the timeout.

import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;

public final class BrokerProbe {
  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: BrokerProbe <bootstrap servers> <timeout ms>");
      System.exit(2);
    }
    String bootstrap = args[0];
    int timeoutMs = Integer.parseInt(args[1]);

    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, "anomaly-platform-infra-probe");
    // The admin client retries connection refusals and metadata errors itself until this deadline.
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, timeoutMs);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Math.min(timeoutMs, 5_000));
    props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500);

    try (Admin admin = Admin.create(props)) {
      DescribeClusterResult cluster = admin.describeCluster();
      String clusterId = cluster.clusterId().get(timeoutMs, TimeUnit.MILLISECONDS);
      int brokers = cluster.nodes().get(timeoutMs, TimeUnit.MILLISECONDS).size();
      if (brokers == 0) {
        System.err.println("broker at " + bootstrap + " answered with no live brokers");
        System.exit(1);
      }
      // Asking for a group's offsets makes the broker create __consumer_offsets on first use; done
      // here, the first test's consumer group finds its coordinator at once instead of retrying.
      admin
          .listConsumerGroupOffsets("anomaly-platform-infra-probe")
          .partitionsToOffsetAndMetadata()
          .get(timeoutMs, TimeUnit.MILLISECONDS);
      System.out.println("cluster " + clusterId + ", " + brokers + " broker(s) at " + bootstrap);
    } catch (Exception e) {
      System.err.println("no answer from " + bootstrap + " within " + timeoutMs + " ms: " + e);
      System.exit(1);
    }
  }
}
