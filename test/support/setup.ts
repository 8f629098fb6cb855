// Runs before every test file.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
// The functions' structured logs stay out of the test output; a test that reads them turns them on.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
