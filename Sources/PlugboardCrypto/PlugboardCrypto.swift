public enum PlugboardCrypto {}
