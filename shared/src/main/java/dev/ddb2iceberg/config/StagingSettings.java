package dev.ddb2iceberg.config;

/** Where staged changes and quarantined records live; shared by the stager and the merger. */
public record StagingSettings(String bucket, String stagingPrefix, String quarantinePrefix) {

    public static StagingSettings from(Environment env) {
        String staging = env.prefix(Settings.STAGING_PREFIX);
        String quarantine = env.prefix(Settings.QUARANTINE_PREFIX);
        if (staging.startsWith(quarantine) || quarantine.startsWith(staging)) {
            throw new ConfigurationException("STAGING_PREFIX='" + staging + "' and QUARANTINE_PREFIX='" + quarantine
                    + "' overlap; give them separate prefixes such as 'staging/' and 'quarantine/'.");
        }
        return new StagingSettings(env.required(Settings.STAGING_BUCKET), staging, quarantine);
    }
}
