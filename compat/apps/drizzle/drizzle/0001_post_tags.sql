ALTER TABLE `posts` ADD `tag` text;--> statement-breakpoint
CREATE INDEX `posts_author_idx` ON `posts` (`author_id`);
