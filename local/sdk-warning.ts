// Under Node 20 the AWS SDK warns on every start that its releases from 2027 will need Node 22
// (NodeVersionSupportWarning). On this machine that is noise for the local server and one-shot
// runs, which pin their SDK; deployed functions run Node 22 and never see it. A value set by the
// caller wins. Imported first, before any SDK client is made.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
export {};
