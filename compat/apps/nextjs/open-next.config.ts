// OpenNext's defaults for Cloudflare: no incremental cache, queue or tag
// cache bindings (none of the pages is cached).
import { defineCloudflareConfig } from "@opennextjs/cloudflare";

export default defineCloudflareConfig();
