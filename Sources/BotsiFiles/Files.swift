/// How the tool touches the file system: safe outputs, the journal's resolved path and its lock.
/// Every target that creates or opens a file by a path a person typed goes through here.
public enum Files {}
