// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "@openzeppelin/contracts/proxy/Clones.sol";
import "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @title One receipt's payment address: forwards every token it holds to one split contract.
/// @notice Deployed only as an EIP-1167 clone by PaymentForwarderFactory, which initializes it in
/// the same transaction. Anyone may sweep; the tokens can only ever go to `split`.
/// The implementation itself is never initialized (only the factory could, and it never does),
/// so it holds no destination and every sweep on it reverts.
contract PaymentForwarder {
    using SafeERC20 for IERC20;

    /// @notice The factory that deploys the clones. Immutable, so a clone reads the implementation's
    /// value through its code: the factory, whoever calls the clone.
    address public immutable factory;
    /// @notice Where every token balance goes; set once, by the factory, at deployment.
    address public split;

    error NotFactory();
    error AlreadyInitialized();
    error NotInitialized();
    error ZeroSplit();

    constructor() {
        factory = msg.sender;
    }

    function initialize(address split_) external {
        if (msg.sender != factory) revert NotFactory();
        if (split != address(0)) revert AlreadyInitialized();
        if (split_ == address(0)) revert ZeroSplit();
        split = split_;
    }

    /// @notice Moves this address's whole balance of `token` to the split. Callable by anyone.
    function sweep(address token) external returns (uint256 amount) {
        address to = split;
        if (to == address(0)) revert NotInitialized();
        amount = IERC20(token).balanceOf(address(this));
        if (amount > 0) IERC20(token).safeTransfer(to, amount);
    }
}

/// @title Deploys payment forwarders at addresses known in advance, and sweeps them.
/// @notice The split is part of the CREATE2 salt, so an address predicted for split S can only
/// ever hold a forwarder to S: nobody, the service included, can redirect money paid there.
contract PaymentForwarderFactory {
    address public immutable implementation;

    event Swept(address indexed forwarder, address indexed split, address indexed token, uint256 amount);

    error ZeroSplit();

    constructor() {
        implementation = address(new PaymentForwarder());
    }

    function predict(address split, bytes32 salt) public view returns (address) {
        return Clones.predictDeterministicAddress(implementation, keccak256(abi.encode(split, salt)));
    }

    /// @notice Deploys the forwarder for (split, salt) if it is not there yet, then sweeps its
    /// balance of `token` into the split. Callable by anyone; an empty sweep moves nothing.
    function sweep(address split, bytes32 salt, address token) external returns (address forwarder, uint256 amount) {
        if (split == address(0)) revert ZeroSplit();
        bytes32 boundSalt = keccak256(abi.encode(split, salt));
        forwarder = Clones.predictDeterministicAddress(implementation, boundSalt);
        if (forwarder.code.length == 0) {
            Clones.cloneDeterministic(implementation, boundSalt);
            PaymentForwarder(forwarder).initialize(split);
        }
        amount = PaymentForwarder(forwarder).sweep(token);
        emit Swept(forwarder, split, token, amount);
    }
}
