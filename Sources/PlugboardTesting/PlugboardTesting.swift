public enum PlugboardTesting {}
